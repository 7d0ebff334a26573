# syntax=docker/dockerfile:1
# Perspecto, the Stratego tournament bot daemon.
#
#   docker build -t perspecto .                      # on python:3.11-slim
#   scripts/build-image                              # no Docker engine: buildah + a debootstrapped base
#
# Two stages on the same base image: "build" compiles the Cython engine and installs the package into a
# virtualenv at /opt/perspecto; "runtime" gets that virtualenv and nothing else (no compiler, no headers,
# no pip). The base must be Debian-like with python3 >= 3.11: the default python:3.11-slim, or plain
# Debian bookworm with python3, python3-venv (see scripts/build-image). Both stages use the same base, so
# the virtualenv's interpreter link (/usr/local/bin/python3 or /usr/bin/python3) exists in both.
# See docs/docker.md.

ARG BASE_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# The C toolchain, plus (on plain Debian, whose python3 lacks them) the headers and venv.
RUN set -eux; \
    pkgs="gcc libc6-dev"; \
    python3 -c 'import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")))' \
        || pkgs="$pkgs python3-dev"; \
    python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs="$pkgs python3-venv"; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs; \
    rm -rf /var/lib/apt/lists/*

RUN python3 -m venv /opt/perspecto

WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY engine_ext ./engine_ext
COPY protocol ./protocol
COPY setups ./setups
COPY bot ./bot

# A wheel of the package (Cython comes from PyPI through the build-system requirements) and of its
# dependencies, into /wheels; then the virtualenv from those wheels alone. The compiled engine is
# stripped of its debug symbols, the C that Cython generated is dropped (the wheel carries it), and
# pip/setuptools leave the virtualenv (the runtime needs neither).
RUN set -eux; \
    /opt/perspecto/bin/pip wheel --wheel-dir /wheels .; \
    /opt/perspecto/bin/pip install --no-index --find-links /wheels perspecto; \
    find /opt/perspecto -path '*/engine_ext/*.so' -exec strip --strip-unneeded {} +; \
    find /opt/perspecto -path '*/engine_ext/*.c' -delete; \
    /opt/perspecto/bin/python -m pip uninstall -y pip setuptools; \
    /opt/perspecto/bin/perspecto --version

# ---------------------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

LABEL org.opencontainers.image.title="perspecto" \
      org.opencontainers.image.description="Perspecto, a Stratego tournament bot daemon" \
      org.opencontainers.image.licenses="MIT"

# The search runs its threads with OpenMP: the runtime needs libgomp (and nothing else compiled).
# The non-root user the daemon runs as; its home is the state directory.
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1; \
    rm -rf /var/lib/apt/lists/*; \
    groupadd --gid 10001 perspecto; \
    useradd --uid 10001 --gid perspecto --home-dir /var/lib/perspecto --no-create-home \
        --shell /usr/sbin/nologin perspecto; \
    install -d -o perspecto -g perspecto -m 0750 /var/lib/perspecto; \
    install -d -o root -g root -m 0755 /etc/perspecto

COPY --from=build /opt/perspecto /opt/perspecto
# Default profiles, owned by root and read-only to the daemon; a mounted config volume replaces them.
COPY config/ /etc/perspecto/

ENV PATH=/opt/perspecto/bin:$PATH \
    PERSPECTO_CONFIG_DIR=/etc/perspecto \
    PERSPECTO_STATE_DIR=/var/lib/perspecto \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# Configuration (mount read-only) and state: the heartbeat file, game records.
VOLUME ["/etc/perspecto", "/var/lib/perspecto"]
WORKDIR /var/lib/perspecto

# uid:gid of "perspecto", numeric so that runAsNonRoot-style checks can verify it.
USER 10001:10001

# Healthy while the daemon's heartbeat file ($PERSPECTO_STATE_DIR/health.json) is fresh.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["perspecto", "health"]

# The daemon runs as PID 1 and installs no SIGTERM handler; SIGINT (KeyboardInterrupt, exit 130) stops
# it cleanly on `docker stop`.
STOPSIGNAL SIGINT

ENTRYPOINT ["perspecto"]
CMD ["bot"]
