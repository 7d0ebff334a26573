# Perspecto bot daemon. Build stage compiles the Cython engine; the runtime stage stays slim.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY bot ./bot
COPY protocol ./protocol
COPY setups ./setups
COPY engine_ext ./engine_ext
COPY config ./config
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 perspecto
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY --chown=perspecto:perspecto config /etc/perspecto
USER perspecto
WORKDIR /home/perspecto
ENV PERSPECTO_CONFIG_DIR=/etc/perspecto
VOLUME ["/etc/perspecto", "/home/perspecto/data"]
ENTRYPOINT ["perspecto"]
CMD ["--help"]
