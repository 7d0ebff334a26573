"""End to end over MQTT: a private mosquitto, the host in the test's event loop serving MQTT, and every bot
its own ``perspecto bot --mqtt`` process.

The games are checked against each bot's own journal of them: the moves the host recorded must be exactly
the moves each bot applied, in order, none lost and none twice, however the broker was treated meanwhile.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.host.referee import BotSession, GameResult, Host, HostSettings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from protocol.mqtt import DownClock, MqttSettings, ReliableStream
from tests.mqtt_broker import (
    REPO,
    BotProcesses,
    Broker,
    TcpProxy,
    journal_moves,
    make_test_ca,
    proxy_to,
    running_broker,
)

pytestmark = pytest.mark.mqtt

NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}
HOST_ID = "e2e"


@asynccontextmanager
async def mqtt_host(url: str, tmp_path: Path, **settings: Any) -> AsyncIterator[Host]:
    mqtt = MqttSettings.from_url(f"{url}/{HOST_ID}", **settings.pop("mqtt", {}))
    options: dict[str, Any] = dict(move_limit=300, move_time_max=1.0, grace=0.3, call_timeout=3.0,
                                   records_dir=tmp_path / "records", resume_grace=20.0, mqtt=mqtt)
    host = Host(HostSettings(**{**options, **settings}))
    await host.start()
    try:
        yield host
    finally:
        await host.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path / "broker") as instance:
        yield instance


@pytest.fixture
async def proxy(broker: Broker) -> AsyncIterator[TcpProxy]:
    async with proxy_to(broker) as instance:
        yield instance


async def claim(host: Host, *tokens: str) -> list[BotSession]:
    return [await host.wait_for_bot(token=token, timeout=30) for token in tokens]


async def check_game(result: GameResult, bots: BotProcesses, *tokens: str) -> GameRecord:
    """A normal end, a record that replays, and each bot's journal holding exactly the record's moves."""
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert result.record_path is not None
    record = GameRecord.load(result.record_path)
    assert len(list(replay_positions(record))) == result.plies + 1
    recorded = [m.move for m in record.moves]
    assert len(recorded) == result.plies
    for token in tokens:
        seen = journal_moves(await bots.finished_journal(token, result.game_id))
        assert seen == recorded, f"bot-{token} saw {len(seen)} moves, the host recorded {len(recorded)}"
    return record


async def say_goodbye(sessions: list[BotSession], processes: list[asyncio.subprocess.Process]) -> None:
    for session in sessions:
        await session.goodbye("test over")
    for process in processes:
        assert await asyncio.wait_for(process.wait(), 15) == 0


class Outage:
    """Breaks the broker link once the game reaches ``at_ply`` (in the background: the game goes on
    calling meanwhile) and measures how long the game took to move again after the link was back."""

    def __init__(self, at_ply: int, action: Any) -> None:
        self.at_ply = at_ply
        self.action = action
        self.task: asyncio.Task[None] | None = None
        self.restored_at: float | None = None
        self.next_move_after: float | None = None
        self.plies_before: int | None = None

    async def __call__(self, game: Game, played: MoveResult | None) -> None:
        if self.task is None and game.ply >= self.at_ply:
            self.plies_before = game.ply
            self.task = asyncio.create_task(self._run())
        elif self.restored_at is not None and self.next_move_after is None:
            self.next_move_after = time.monotonic() - self.restored_at

    async def _run(self) -> None:
        await self.action()
        self.restored_at = time.monotonic()


async def test_a_full_game_over_mqtt(broker: Broker, bots: BotProcesses, tmp_path: Path) -> None:
    async with mqtt_host(broker.url, tmp_path) as host:
        url = host.mqtt_address
        assert url is not None and url.endswith(f"/{HOST_ID}")
        a = await bots.start("a", "--mqtt", url, seed=1)
        b = await bots.start("b", "--mqtt", url, seed=2)
        session_a, session_b = await claim(host, "a", "b")
        assert session_a.endpoint.channel.peer.startswith("mqtt:bot-a/")
        result = await host.play_game(session_a, session_b)
        await check_game(result, bots, "a", "b")
        await say_goodbye([session_a, session_b], [a, b])
    # the bots kept a heartbeat through the session and left it saying they stopped
    for token in ("a", "b"):
        states = [e["state"] for e in bots.events(token, "bot.health")]
        assert states[0] == "disconnected" and "in_game" in states and states[-1] == "disconnected"
        assert states.index("idle") < states.index("in_game")
        closed = bots.events(token, "mqtt.channel_closed")[-1]
        assert closed["duplicates"] == 0 and closed["stale"] == 0


@pytest.mark.slow  # a whole game with an outage in it, in real time: the slow suite (.ci/run runs it)
async def test_the_broker_link_cut_and_restored_mid_game(
    broker: Broker, proxy: TcpProxy, bots: BotProcesses, tmp_path: Path
) -> None:
    """Host and bots reach the broker through a proxy; it drops every connection for 1.5 s at ply 60.
    Nobody's endpoint notices: the channels reconnect, resend, drop duplicates, and the game goes on."""

    async def cut() -> None:
        await proxy.cut()
        await asyncio.sleep(1.5)
        await proxy.restore()

    outage = Outage(60, cut)
    async with mqtt_host(f"mqtt://127.0.0.1:{proxy.port}", tmp_path) as host:
        url = host.mqtt_address
        assert url is not None
        a = await bots.start("a", "--mqtt", url, seed=3)
        b = await bots.start("b", "--mqtt", url, seed=4)
        session_a, session_b = await claim(host, "a", "b")
        result = await host.play_game(session_a, session_b, on_move=outage)
        assert outage.task is not None and outage.task.done() and proxy.cuts == 1
        assert result.plies > outage.at_ply, "the game ended before the cut"
        await check_game(result, bots, "a", "b")
        # the same sessions, the same endpoints: the outage stayed inside the channels
        assert session_a.alive and session_b.alive
        assert session_a.endpoint.channel.link_down_seconds() >= 1.0  # type: ignore[attr-defined]
        print(f"\nproxy cut 1.5 s: the game moved again {outage.next_move_after:.3f} s after the link was back")
        await say_goodbye([session_a, session_b], [a, b])
    for token in ("a", "b"):
        assert bots.events(token, "mqtt.reconnected"), f"bot-{token} never reconnected"
        assert not bots.events(token, "bot.connection_lost")  # the endpoint above never noticed
        # the heartbeat said so meanwhile: in a game, out of reach, in the game again
        states = [e["state"] for e in bots.events(token, "bot.health")]
        playing = states.index("in_game")
        assert states[playing:playing + 3] == ["in_game", "disconnected", "in_game"]


@pytest.mark.slow  # a whole game with an outage in it, in real time: the slow suite (.ci/run runs it)
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["broker-restart", "broker-killed"])
async def test_the_broker_restarted_mid_game(
    how: signal.Signals, broker: Broker, bots: BotProcesses, tmp_path: Path
) -> None:
    """The broker stops (SIGTERM: it saves its persistence; SIGKILL: whatever it queued since its last save
    is gone) and starts again on the same port 1 s later. The persistent sessions and the channels' own
    resending carry the game over it."""

    async def restart() -> None:
        await asyncio.to_thread(broker.restart, how, 1.0)

    outage = Outage(60, restart)
    async with mqtt_host(broker.url, tmp_path) as host:
        url = host.mqtt_address
        assert url is not None
        a = await bots.start("a", "--mqtt", url, seed=5)
        b = await bots.start("b", "--mqtt", url, seed=6)
        session_a, session_b = await claim(host, "a", "b")
        result = await host.play_game(session_a, session_b, on_move=outage)
        assert broker.starts == 2 and result.plies > outage.at_ply
        await check_game(result, bots, "a", "b")
        print(f"\nbroker {how.name}+restart: the game moved again {outage.next_move_after:.3f} s after the "
              "broker was back")
        await say_goodbye([session_a, session_b], [a, b])
    for token in ("a", "b"):
        assert not bots.events(token, "bot.connection_lost")


@pytest.mark.slow  # a whole game with an outage in it, in real time: the slow suite (.ci/run runs it)
async def test_a_bot_killed_and_restarted_mid_game_resumes(
    broker: Broker, bots: BotProcesses, tmp_path: Path
) -> None:
    """SIGKILL the red bot at ply 60; a new process with the same state directory replays its journal,
    comes back with ``hello resumeGame`` and the game finishes normally."""
    processes: dict[str, asyncio.subprocess.Process] = {}
    url = f"{broker.url}/{HOST_ID}"

    async def kill_and_restart() -> None:
        processes["a"].kill()
        await processes["a"].wait()
        processes["a"] = await bots.start("a", "--mqtt", url, seed=7)

    outage = Outage(60, kill_and_restart)
    async with mqtt_host(broker.url, tmp_path) as host:
        assert host.mqtt_address == url
        processes["a"] = await bots.start("a", "--mqtt", url, seed=7)
        processes["b"] = await bots.start("b", "--mqtt", url, seed=8)
        session_a, session_b = await claim(host, "a", "b")
        first_endpoint = session_a.endpoint
        result = await host.play_game(session_a, session_b, on_move=outage)
        await check_game(result, bots, "a", "b")
        assert session_a.endpoint is not first_endpoint  # the same session, on the new process's stream
        print(f"\nbot SIGKILL+restart: the game moved again {outage.next_move_after:.3f} s after the new "
              "process started")
        await say_goodbye([session_a, session_b], [processes["a"], processes["b"]])
    [replayed] = bots.events("a", "bot.journal_replayed")
    assert replayed["game"] == result.game_id and int(str(replayed["calls"])) > 60
    assert bots.events("a", "bot.resumed")
    journal = (await bots.finished_journal("a", result.game_id)).read_text()
    assert '"resumed"' in journal  # the new process went on writing the same journal


@pytest.mark.slow  # a whole game with an outage in it, in real time: the slow suite (.ci/run runs it)
async def test_a_bot_that_vanishes_forfeits_after_the_grace(broker: Broker, bots: BotProcesses, tmp_path: Path) -> None:
    """Killed and not restarted: out of reach (its last will), its stream ends after the link timeout, and
    the time out of reach counted against its resume grace, it forfeits about 2 s after it vanished."""
    processes: dict[str, asyncio.subprocess.Process] = {}

    async def kill() -> None:
        processes["a"].kill()
        await processes["a"].wait()

    outage = Outage(30, kill)
    async with mqtt_host(broker.url, tmp_path, resume_grace=2.0, mqtt={"link_timeout": 2.0}) as host:
        url = host.mqtt_address
        assert url is not None
        processes["a"] = await bots.start("a", "--mqtt", url, seed=9)
        processes["b"] = await bots.start("b", "--mqtt", url, seed=10)
        session_a, session_b = await claim(host, "a", "b")
        result = await host.play_game(session_a, session_b, on_move=outage)
        assert outage.restored_at is not None
        gone_for = time.monotonic() - outage.restored_at
        assert result.reason == "forfeit_crash" and result.forfeits == {Side.RED}, result.summary()
        assert "out of reach" in (result.detail or "")
        assert 1.5 < gone_for < 5, f"forfeited {gone_for:.2f} s after the bot vanished"
        await say_goodbye([session_b], [processes["b"]])


@pytest.mark.long
async def test_credentials(tmp_path: Path, bots: BotProcesses) -> None:
    secured = Broker(tmp_path / "secured", users={"host": "h-secret", "bot": "b-secret"})
    secured.start()
    try:
        base = f"127.0.0.1:{secured.port}"
        async with mqtt_host(f"mqtt://host:h-secret@{base}", tmp_path, move_limit=40) as host:
            assert host.mqtt_address == f"mqtt://host@{base}/{HOST_ID}"  # no password in what is shown
            good = await bots.start("good", "--mqtt", f"mqtt://bot:b-secret@{base}/{HOST_ID}")
            wrong = await bots.start("wrong", "--mqtt", f"mqtt://bot:nope@{base}/{HOST_ID}")
            [session] = await claim(host, "good")
            # bad credentials are not worth retrying: the bot says why and exits 2 at once
            assert await asyncio.wait_for(wrong.wait(), 20) == 2
            [refused] = bots.events("wrong", "bot.refused")
            # mosquitto says 135 "not authorized" for a wrong password (134 would be "bad user name or password")
            assert any(code in str(refused["error"]) for code in ("[code:134]", "[code:135]"))
            assert "nope" not in bots.log_path("wrong").read_text()
            await say_goodbye([session], [good])
    finally:
        secured.stop()


@pytest.mark.long
async def test_tls_with_a_ca_file(tmp_path: Path, bots: BotProcesses) -> None:
    certificates = make_test_ca(tmp_path / "pki")
    secure = Broker(tmp_path / "tls", tls=certificates)
    secure.start()
    try:
        ca = certificates["ca"]
        async with mqtt_host(f"mqtts://127.0.0.1:{secure.port}", tmp_path, move_limit=40,
                             mqtt={"ca_file": ca}) as host:
            url = host.mqtt_address
            assert url is not None and url.startswith("mqtts://")
            a = await bots.start("a", "--mqtt", url, "--mqtt-ca", str(ca))
            b = await bots.start("b", "--mqtt", f"{url}?ca={ca}")
            unverified = await bots.start("c", "--mqtt", url)  # the system CAs do not know ours
            session_a, session_b = await claim(host, "a", "b")
            result = await host.play_game(session_a, session_b)
            assert result.reason in NORMAL_ENDS
            assert await asyncio.wait_for(unverified.wait(), 20) == 2
            assert "CERTIFICATE_VERIFY_FAILED" in str(bots.events("c", "bot.refused")[0]["error"])
            await say_goodbye([session_a, session_b], [a, b])
    finally:
        secure.stop()


@pytest.mark.long
async def test_host_command_serves_tcp_and_mqtt_at_once(broker: Broker, bots: BotProcesses, tmp_path: Path) -> None:
    """``perspecto host --mqtt``: one bot over TCP and one over MQTT play each other."""
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "host", "--listen", "127.0.0.1:0", "--mqtt", f"{broker.url}/mixed",
        "--max-games", "1", "--move-limit", "100", "--records", str(tmp_path / "records"), cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert host.stdout is not None
        tcp_banner = (await asyncio.wait_for(host.stdout.readline(), 20)).decode()
        mqtt_banner = (await asyncio.wait_for(host.stdout.readline(), 20)).decode()
        port = tcp_banner.split("127.0.0.1:")[1].split()[0]
        assert f"{broker.url}/mixed" in mqtt_banner
        over_tcp = await bots.start("t", "--connect", f"127.0.0.1:{port}")
        over_mqtt = await bots.start("m", "--mqtt", f"{broker.url}/mixed")
        out, err = await asyncio.wait_for(host.communicate(), 60)
        assert host.returncode == 0, err.decode()
        assert "bot-t" in out.decode() and "bot-m" in out.decode()
        assert len(list((tmp_path / "records").glob("*.json"))) == 1
        assert await asyncio.wait_for(over_tcp.wait(), 15) == 0
        assert await asyncio.wait_for(over_mqtt.wait(), 15) == 0
    finally:
        if host.returncode is None:
            host.kill()
            await host.wait()


@pytest.mark.long
async def test_match_over_mqtt(broker: Broker, tmp_path: Path) -> None:
    """``perspecto match --transport mqtt``: the match's bots reach its host through the broker."""
    match = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "match", "random", "random", "--via-host", "--games", "2",
        "--move-limit", "60", "--seed", "3", "--transport", "mqtt", "--broker", broker.url,
        "--records", str(tmp_path / "records"),
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(match.communicate(), 90)
    assert match.returncode == 0, err.decode()
    assert "random-a vs random-b: 2 games" in out.decode()
    assert len(list((tmp_path / "records").glob("*.json"))) == 2
    logs = "".join(p.read_text() for p in (tmp_path / "records" / "logs").glob("*.log"))
    assert "mqtt.channel_open" in logs and logs.count("bot.game_over") == 4


# --- the pieces, without a broker -----------------------------------------------------------------------------


def test_the_stream_layer_delivers_once_and_in_order() -> None:
    sender, receiver = ReliableStream(), ReliableStream()
    frames = [sender.send(f"m{i}".encode()) for i in range(1, 6)]
    assert [f.seq for f in frames] == [1, 2, 3, 4, 5]
    delivered = []
    # 1, then 3 and 4 overtake 2, then duplicates of 1 and 3, then 2, then 5 twice
    for seq in (1, 3, 4, 1, 3, 2, 5, 5):
        delivered += [f.payload for f in receiver.receive(frames[seq - 1])]
    assert delivered == [b"m1", b"m2", b"m3", b"m4", b"m5"]
    assert receiver.received == 5 and receiver.duplicates == 3
    sender.acknowledge(3)
    assert [f.seq for f in sender.unacked()] == [4, 5]
    sender.acknowledge(2)  # an old receipt changes nothing
    sender.acknowledge(99)  # one beyond what was sent counts up to what was
    assert sender.all_acked and sender.peer_acked == 5


def test_broker_urls() -> None:
    plain = MqttSettings.from_url("mqtt://broker.example")
    assert (plain.host, plain.port, plain.tls, plain.host_id, plain.username) == ("broker.example", 1883, False,
                                                                                   "local", None)
    full = MqttSettings.from_url("mqtts://bot:p%40ss@10.0.0.5/t-1?ca=/etc/ca.pem&insecure=1&keepalive=5")
    assert (full.port, full.tls, full.host_id, full.username, full.keepalive) == (8883, True, "t-1", "bot", 5)
    assert full.password is not None and full.password.get_secret_value() == "p@ss"
    assert full.ca_file == Path("/etc/ca.pem") and full.tls_insecure
    assert full.url == "mqtts://bot@10.0.0.5:8883/t-1" and "p@ss" not in repr(full)
    assert MqttSettings.from_url("mqtt://h:1884/x", host_id="y").host_id == "y"
    for bad in ("http://h", "mqtt://", "mqtt://h:99999", "mqtt://h/a/b", "mqtt://h?colour=red"):
        with pytest.raises(ValueError):
            MqttSettings.from_url(bad)
    with pytest.raises(ValueError, match="cert_file and key_file"):
        MqttSettings.from_url("mqtts://h?cert=/c.pem")


def test_the_down_clock_adds_up_outages() -> None:
    clock = DownClock()
    assert not clock.down and clock.total() == 0
    assert clock.set(True) and not clock.set(True)
    time.sleep(0.02)
    assert clock.set(False)
    first = clock.total()
    assert first >= 0.02 and clock.current() == 0
    clock.set(True)
    time.sleep(0.01)
    assert clock.total() >= first + 0.01 and clock.current() >= 0.01
