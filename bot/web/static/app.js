// The Perspecto web view: watches the host's games and replays records. Read-only: it fetches and listens,
// never sends. The server sends every board ready-made (bot/web/timeline.py): the start of each view and,
// for every move, what it changed, each side's thinking time so far and red's winning chances
// (bot/web/outlook.py); this page only applies and draws them, so it holds no rules.
"use strict";

const state = {
  games: new Map(),      // id -> summary
  doc: null,             // the open game: summary + board + start + moves
  ply: 0,                // the ply shown
  view: "referee",       // "referee", "red" or "blue"
  follow: true,          // jump to each new move
  clock: null,           // the open game's clock, and when it arrived
  clockAt: 0,
  standings: null,
  loading: null,         // the id of the game being fetched
  pending: [],           // its moves that came meanwhile
  auto: false,           // the open game was opened by the page (not chosen): a new live game replaces it
};

const SVG = "http://www.w3.org/2000/svg";

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function svgEl(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

// --- the hash: #game=ID&ply=N&view=V ---------------------------------------------------------------

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { game: params.get("game"), ply: params.get("ply"), view: params.get("view") };
}

function writeHash() {
  if (!state.doc) return;
  const params = new URLSearchParams({ game: state.doc.id, view: state.view });
  if (!state.follow) params.set("ply", String(state.ply));
  history.replaceState(null, "", "#" + params.toString());
}

// --- the list of games and the standings -----------------------------------------------------------------

function resultText(game) {
  const r = game.result;
  if (!r) return game.status === "live" ? `ply ${game.plies}` : game.status;
  const who = r.winner ? `${r.winner === "red" ? game.red : game.blue} (${r.winner}) won` : "draw";
  return `${who} by ${String(r.reason).replaceAll("_", " ")}, ${r.plies ?? game.plies} plies`;
}

// The newest first: by start time, then by id (a host numbers its games in order).
function newestFirst(a, b) {
  return (b.started || "").localeCompare(a.started || "") || b.id.localeCompare(a.id);
}

function renderList() {
  const live = $("live-games"), finished = $("finished-games");
  live.replaceChildren();
  finished.replaceChildren();
  const games = [...state.games.values()];
  games.sort(newestFirst);
  for (const game of games) {
    const item = el("li", { "data-game": game.id, "data-status": game.status },
      el("span", { class: "red-name", text: game.red }), " vs ", el("span", { class: "blue-name", text: game.blue }),
      el("span", { class: "result", text: `${game.id}: ${resultText(game)}` }));
    if (state.doc && state.doc.id === game.id) item.classList.add("selected");
    item.addEventListener("click", () => openGame(game.id, { auto: false }));
    (game.status === "live" ? live : finished).append(item);
  }
  $("no-live").hidden = live.children.length > 0;
  $("no-finished").hidden = finished.children.length > 0;
}

function renderStandings() {
  const section = $("standings-section");
  section.hidden = !state.standings;
  if (!state.standings) return;
  const body = $("standings").tBodies[0];
  body.replaceChildren();
  for (const t of state.standings) {
    body.append(el("tr", {}, ...[t.name, t.games, t.wins, t.draws, t.losses, t.forfeits, t.score]
      .map((v) => el("td", { text: String(v) }))));
  }
}

// The game to open by itself: the newest live one, else the newest finished one.
function gameToWatch() {
  const games = [...state.games.values()].sort(newestFirst);
  return (games.find((g) => g.status === "live") || games[0] || null)?.id ?? null;
}

// Open a game by itself when none is open. A game it opened (not one the viewer chose, nor one they have
// stepped through) gives way, once it is over, to the one to watch now: the next live game on a host, the
// newest record in a folder the lab fills.
function autoOpen() {
  if (state.loading) return;
  const id = gameToWatch();
  if (id === null) return;
  if (state.doc && (!state.auto || state.doc.status === "live" || state.doc.id === id)) return;
  openGame(id, { auto: true });
}

// --- one game --------------------------------------------------------------------------------------------

async function openGame(id, { ply = null, view = null, auto = null } = {}) {
  // Moves of this game that arrive while it is fetched wait in ``pending`` and are applied on top of it.
  if (auto !== null) state.auto = auto;
  else if (!state.doc || state.doc.id !== id) state.auto = false;
  state.loading = id;
  state.pending = [];
  const response = await fetch(`/api/games/${encodeURIComponent(id)}`);
  if (state.loading !== id) return;  // another game was opened meanwhile
  if (!response.ok) {
    state.loading = null;
    showError(`cannot open game ${id}: ${await response.text()}`);
    return;
  }
  const doc = await response.json();
  if (state.loading !== id) return;
  state.loading = null;
  const same = state.doc && state.doc.id === doc.id;
  state.doc = doc;
  if (view) state.view = view;
  setClock(doc.clock);
  let gap = false;
  if (doc.board) for (const message of state.pending) gap = addMove(message) === "gap" || gap;
  state.pending = [];
  const plies = doc.moves ? doc.moves.length : 0;
  if (ply !== null) {
    state.follow = false;
    state.ply = Math.max(0, Math.min(plies, Number(ply)));
  } else if (!same) {
    state.follow = doc.status === "live";
    state.ply = state.follow ? plies : 0;
  } else if (state.follow) {
    state.ply = plies;
  }
  $("follow").checked = state.follow;
  renderGame();
  renderList();
  writeHash();
  if (gap) openGame(id, state.follow ? {} : { ply: state.ply });
  else autoOpen();  // a live game may have started while this one was fetched
}

// Add a live move to the open game: "added", "old" (already there) or "gap" (moves are missing).
function addMove(message) {
  const doc = state.doc;
  const have = doc.moves.length;
  if (message.move.ply <= have) return "old";
  if (message.move.ply > have + 1) return "gap";
  doc.moves.push(message.move);
  doc.plies = message.move.ply;
  setClock(message.clock);
  return "added";
}

function showError(text) {
  $("error").hidden = !text;
  $("error").textContent = text || "";
}

function symbolOf(rank) {
  return state.doc.board.symbols[rank] ?? "?";
}

function pieceNode(cell) {
  const [side, rank, moved] = cell.split("/");
  const node = el("span", { class: `piece ${side}`, title: `${side} ${rank}${moved ? " (has moved)" : ""}`,
    text: symbolOf(rank) });
  if (rank === "unknown") node.classList.add("unknown");
  if (moved) node.classList.add("moved");
  return node;
}

// The board of ``view`` after ``ply`` plies: the start, then every move's changes.
function boardAt(view, ply) {
  const cells = Object.assign({}, state.doc.start[view]);
  for (const move of state.doc.moves.slice(0, ply)) {
    for (const [square, cell] of Object.entries(move.changes[view])) {
      if (cell === null) delete cells[square];
      else cells[square] = cell;
    }
  }
  return cells;
}

function capturedAt(ply) {
  const taken = { red: [], blue: [] };
  for (const move of state.doc.moves.slice(0, ply)) {
    for (const cell of move.captured) taken[cell.split("/")[0]].push(cell);
  }
  const order = Object.keys(state.doc.board.symbols);  // flag, spy, scout ... marshal, bomb
  const rank = (cell) => order.indexOf(cell.split("/")[1]);
  for (const side of ["red", "blue"]) taken[side].sort((a, b) => rank(b) - rank(a));
  return taken;
}

const COLUMNS = "ABCDEFGHIJKL";

function renderBoard() {
  const { width, height, lakes } = state.doc.board;
  const board = $("board");
  board.style.gridTemplateColumns = `var(--coord) repeat(${width}, var(--sq))`;
  board.style.setProperty("--columns", String(width));
  const cells = boardAt(state.view, state.ply);
  const last = state.ply > 0 ? state.doc.moves[state.ply - 1].move.split("-") : [];
  const lakeSet = new Set(lakes);
  const nodes = [];
  for (let row = height; row >= 1; row--) {
    nodes.push(el("div", { class: "coord", text: String(row) }));
    for (let col = 0; col < width; col++) {
      const square = COLUMNS[col] + row;
      const cell = cells[square] ?? null;
      const node = el("div", { class: "sq", "data-square": square, "data-cell": cell ?? "" });
      if (lakeSet.has(square)) node.classList.add("lake");
      if (last.includes(square)) node.classList.add("last");
      if (cell) node.append(pieceNode(cell));
      nodes.push(node);
    }
  }
  nodes.push(el("div", { class: "coord" }));
  for (let col = 0; col < width; col++) nodes.push(el("div", { class: "coord", text: COLUMNS[col] }));
  board.replaceChildren(...nodes);
  board.dataset.ply = String(state.ply);
  board.dataset.view = state.view;
  const taken = capturedAt(state.ply);
  $("captured-red").replaceChildren(...taken.red.map(pieceNode));
  $("captured-blue").replaceChildren(...taken.blue.map(pieceNode));
  renderArrows();
}

// --- the engine's line, as arrows on the board ------------------------------------------------------------

function pvMove(m) {
  const [from, to] = typeof m === "string" ? m.split("-") : [m.from, m.to];
  return { from, to };
}

// The line drawn at ``ply``: the one the engine to move gave with the move it played from here (its move
// first); at the last ply (a live game's newest), where no move follows yet, the rest of the line the last
// mover expected (the replies it foresaw). Null when the bots gave none.
function lineAt(ply) {
  const moves = state.doc.moves;
  const next = moves[ply], last = moves[ply - 1];
  if (next && next.info && next.info.pv && next.info.pv.length) {
    return { side: next.side, moves: next.info.pv.map(pvMove), by: "next" };
  }
  if (!next && last && last.info && last.info.pv && last.info.pv.length > 1) {
    return { side: last.side === "red" ? "blue" : "red", moves: last.info.pv.slice(1).map(pvMove), by: "last" };
  }
  return null;
}

function renderArrows() {
  const svg = $("arrows");
  const board = $("board");
  svg.replaceChildren();
  const line = state.doc && state.doc.board ? lineAt(state.ply) : null;
  svg.dataset.count = "0";
  if (!line) return;
  const frame = board.getBoundingClientRect();
  svg.setAttribute("width", String(frame.width));
  svg.setAttribute("height", String(frame.height));
  svg.setAttribute("viewBox", `0 0 ${frame.width} ${frame.height}`);
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: "arrow-head", viewBox: "0 0 10 10", refX: 4, refY: 5,
    markerWidth: 3, markerHeight: 3, orient: "auto-start-reverse" });
  marker.append(svgEl("path", { d: "M0,0 L10,5 L0,10 z", class: "head" }));
  defs.append(marker);
  svg.append(defs);
  const centre = (square) => {
    const node = board.querySelector(`.sq[data-square="${square}"]`);
    if (!node) return null;
    const r = node.getBoundingClientRect();
    return [r.left - frame.left + r.width / 2, r.top - frame.top + r.height / 2, r.width];
  };
  let side = line.side, drawn = 0;
  line.moves.forEach((move, index) => {
    const a = centre(move.from), b = centre(move.to);
    if (a && b) {
      const [x1, y1, size] = a, [x2, y2] = b;
      const length = Math.hypot(x2 - x1, y2 - y1) || 1;
      const cut = size * 0.3;  // stop short of the centre, so the head sits on the square
      const arrow = svgEl("line", {
        x1, y1, x2: x2 - ((x2 - x1) / length) * cut, y2: y2 - ((y2 - y1) / length) * cut,
        class: side === line.side ? "arrow" : "arrow reply", "stroke-width": size * (index === 0 ? 0.22 : 0.16),
        "marker-end": "url(#arrow-head)", opacity: Math.max(0.35, 0.85 - index * 0.15),
        "data-from": move.from, "data-to": move.to, "data-side": side, "data-index": index,
      });
      if (side !== line.side) arrow.setAttribute("stroke-dasharray", `${size * 0.05} ${size * 0.3}`);
      arrow.append(svgEl("title"));
      arrow.firstChild.textContent = `${index + 1}. ${side} ${move.from}-${move.to}`;
      svg.append(arrow);
      drawn++;
    }
    side = side === "red" ? "blue" : "red";
  });
  svg.dataset.count = String(drawn);
  svg.dataset.by = line.by;
}

// --- red's winning chances, as a graph over the game ------------------------------------------------------

function outlooks() {
  const doc = state.doc;
  return [doc.start_outlook ?? 0.5, ...doc.moves.map((m) => m.outlook ?? 0.5)];
}


function renderGraph() {
  const svg = $("graph");
  svg.replaceChildren();
  const points = outlooks();
  const plies = points.length - 1;
  const width = Math.max(120, Math.round(svg.getBoundingClientRect().width) || 480);
  const height = 90;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", String(height));
  svg.dataset.plies = String(plies);
  svg.dataset.ply = String(state.ply);
  const x = (ply) => (plies ? (ply / plies) * width : 0);
  const y = (p) => (1 - p) * height;
  // Blue's share above the line, red's below: the red area is red's chance at every ply.
  svg.append(svgEl("rect", { x: 0, y: 0, width, height, class: "blue-share" }));
  const line = points.map((p, ply) => `${x(ply).toFixed(1)},${y(p).toFixed(1)}`);
  if (plies === 0) line.push(`${width},${y(points[0]).toFixed(1)}`);
  svg.append(svgEl("polygon", { points: `0,${height} ${line.join(" ")} ${width},${height}`, class: "red-share" }));
  svg.append(svgEl("line", { x1: 0, y1: height / 2, x2: width, y2: height / 2, class: "even" }));
  svg.append(svgEl("polyline", { points: line.join(" "), class: "trend" }));
  const here = svgEl("line", { x1: x(state.ply), y1: 0, x2: x(state.ply), y2: height, class: "now" });
  here.id = "graph-now";
  svg.append(here, svgEl("circle", { cx: x(state.ply), cy: y(points[state.ply]), r: 4, class: "now-dot" }));
  const red = Math.round(points[state.ply] * 100);
  $("outlook").textContent = `red's chances ${red} %, blue's ${100 - red} % after ply ${state.ply}` +
    " (from the material on the board: docs/host.md)";
}

function graphClick(event) {
  if (!state.doc || !state.doc.board) return;
  const svg = $("graph");
  const r = svg.getBoundingClientRect();
  const plies = state.doc.moves.length;
  browse(Math.round(((event.clientX - r.left) / r.width) * plies));
}

function infoText(info) {
  if (info.unreadable) return `info unreadable: ${info.unreadable}`;
  const parts = [];
  if (info.depth != null) parts.push(`depth ${info.depth}`);
  if (info.nodes != null) parts.push(`${info.nodes.toLocaleString("en")} nodes`);
  if (info.time != null) parts.push(seconds(info.time));
  if (info.value != null) parts.push(`value ${info.value >= 0 ? "+" : ""}${info.value.toFixed(2)} (its own units)`);
  return parts.join(", ");
}

function seconds(value) {
  return value >= 0.1 ? `${value.toFixed(2)} s` : `${(value * 1000).toFixed(1)} ms`;
}

function lineText(pv) {
  return pv.map((m) => (typeof m === "string" ? m : `${m.from}-${m.to}`)).join(" ");
}

function renderMoves() {
  const list = $("moves");
  list.replaceChildren();
  state.doc.moves.forEach((move, i) => list.append(moveItem(move, i)));
  markCurrentMove();
}

function moveItem(move, index) {
  const item = el("li", { class: move.side, "data-ply": String(move.ply), title: `ply ${move.ply}` },
    el("span", { class: "notation", text: `${move.side} ${move.notation}` }));
  if (move.attacker && move.defender) item.append(el("span", { class: "detail", text: ` (${move.attacker} vs ${move.defender})` }));
  const think = [];
  if (move.info) think.push(infoText(move.info));
  else if (move.seconds != null) think.push(seconds(move.seconds));
  if (think.length && think[0]) item.append(el("span", { class: "think", text: `  ${think.join(", ")}` }));
  item.addEventListener("click", () => browse(index + 1));
  return item;
}

function markCurrentMove() {
  const list = $("moves");
  for (const item of list.querySelectorAll("li.current")) item.classList.remove("current");
  const item = list.children[state.ply - 1];
  if (item) {
    item.classList.add("current");
    // Scroll the list alone (scrollIntoView would scroll the page too).
    if (item.offsetTop < list.scrollTop) list.scrollTop = item.offsetTop;
    else if (item.offsetTop + item.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = item.offsetTop + item.offsetHeight - list.clientHeight;
    }
  }
}

function renderInfo() {
  const box = $("info");
  box.replaceChildren();
  const move = state.ply > 0 ? state.doc.moves[state.ply - 1] : null;
  if (!move) return;
  const rows = [["move", `${move.ply}. ${move.side} ${move.notation}`]];
  if (move.attacker && move.defender) rows.push(["attack", `${move.attacker} vs ${move.defender}`]);
  if (move.seconds != null) rows.push(["took", `${move.seconds.toFixed(3)} s (the host's clock)`]);
  const info = move.info;
  if (info) {
    const summary = infoText(info);
    if (summary) rows.push(["engine", summary]);
    if (info.pv && info.pv.length) rows.push(["line", lineText(info.pv)]);
    const drawn = lineAt(state.ply);
    if (drawn) rows.push(["arrows", `${drawn.by === "next" ? "the line of the move to come" : "the rest of this line"}: ` +
      drawn.moves.map((m) => `${m.from}-${m.to}`).join(" ")]);
    for (const reason of info.reasons || []) rows.push(["reason", reason]);
  }
  const list = el("dl");
  for (const [key, value] of rows) list.append(el("dt", { text: key }), el("dd", { text: value }));
  box.append(list);
}

function renderHead() {
  const doc = state.doc;
  $("title").replaceChildren(el("span", { class: "red-name", text: doc.red }), " vs ",
    el("span", { class: "blue-name", text: doc.blue }));
  const where = doc.record ? ` (record ${doc.record})` : "";  // the file's name; the server never says where
  $("name-red").textContent = doc.red;
  $("name-blue").textContent = doc.blue;
  $("status").textContent = `${doc.id}${where}: ${resultText(doc)}`;
  for (const button of document.querySelectorAll("button.view")) {
    button.classList.toggle("active", button.dataset.view === state.view);
  }
}

function renderControls() {
  const plies = state.doc.moves.length;
  const seekBar = $("seek");
  seekBar.max = String(plies);
  seekBar.value = String(state.ply);
  $("ply").textContent = `ply ${state.ply} of ${plies}`;
}

function renderGame() {
  $("empty").hidden = true;
  $("game").hidden = false;
  $("game").classList.toggle("no-board", !state.doc.board);  // nothing but who played and why there is no board
  renderHead();
  showError(state.doc.error || "");
  const playable = Boolean(state.doc.board);
  $("board").hidden = !playable;
  if (!playable) {
    for (const id of ["moves", "info", "captured-red", "captured-blue", "arrows", "graph", "outlook"]) {
      $(id).replaceChildren();
    }
    renderClock();
    return;
  }
  renderBoard();
  renderMoves();
  renderControls();
  renderInfo();
  renderGraph();
  renderClock();
}

// The viewer moving through the game: the page no longer replaces it by itself.
function browse(ply) {
  state.auto = false;
  seek(ply);
}

function seek(ply) {
  if (!state.doc || !state.doc.board) return;
  const plies = state.doc.moves.length;
  state.ply = Math.max(0, Math.min(plies, ply));
  state.follow = state.doc.status === "live" && state.ply === plies;  // at the newest move of a live game
  $("follow").checked = state.follow;
  renderBoard();
  markCurrentMove();
  renderControls();
  renderInfo();
  renderGraph();
  renderClock();
  writeHash();
}

// --- the clock -------------------------------------------------------------------------------------------

function setClock(clock) {
  state.clock = clock || null;
  state.clockAt = performance.now();
}

function clockText(seconds) {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}:${(seconds - minutes * 60).toFixed(1).padStart(4, "0")}`;
}

// Each side's clock at the ply shown: its thinking time so far (the host's measure in a live game, the
// times the bots gave in a record's ``info``), and for the side to move in a live game at its newest ply
// the move's time running against ``moveTimeMax``.
function renderClock() {
  const doc = state.doc, clock = state.clock;
  const playable = Boolean(doc && doc.board);
  const timed = playable && doc.moves.some((m) => m.took != null);
  const used = playable && state.ply > 0 ? doc.moves[state.ply - 1].used : { red: 0, blue: 0 };
  const newest = playable && state.ply === doc.moves.length;
  const running = newest && doc.status === "live" && clock && clock.to_move && clock.elapsed != null
    ? clock.to_move : null;
  for (const side of ["red", "blue"]) {
    const box = $(`clock-${side}`);
    box.classList.toggle("running", side === running);
    box.dataset.running = String(side === running);
    if (!playable || (!timed && !running)) {
      box.querySelector(".used").textContent = playable ? "no times" : "";
      box.querySelector(".move").textContent = "";
      box.dataset.seconds = "";
      continue;
    }
    let total = used[side] ?? 0;
    let move = "";
    if (side === running) {
      const elapsed = clock.elapsed + (performance.now() - state.clockAt) / 1000;
      total += elapsed;
      const limit = clock.move_time_max;
      move = limit != null ? `${elapsed.toFixed(1)} of ${limit} s` : `${elapsed.toFixed(1)} s`;
      box.style.setProperty("--left", limit ? String(Math.max(0, 1 - elapsed / limit)) : "1");
    }
    box.querySelector(".used").textContent = clockText(total);
    box.querySelector(".move").textContent = move;
    box.dataset.seconds = total.toFixed(2);
  }
}

// --- live changes ----------------------------------------------------------------------------------------

function onMessage(message) {
  switch (message.type) {
    case "hello":
      state.games = new Map(message.games.map((g) => [g.id, g]));
      state.standings = message.standings;
      renderList();
      renderStandings();
      if (state.doc) openGame(state.doc.id, state.follow ? {} : { ply: state.ply });  // catch up after a reconnect
      else autoOpen();
      break;
    case "game": {
      state.games.set(message.game.id, message.game);
      renderList();
      if (state.doc && state.doc.id === message.game.id && state.doc.status !== message.game.status) {
        openGame(message.game.id, state.follow ? {} : { ply: state.ply });  // it ended: its result and record
      } else {
        autoOpen();
      }
      break;
    }
    case "removed":
      state.games.delete(message.game);
      renderList();
      break;
    case "standings":
      state.standings = message.standings;
      renderStandings();
      break;
    case "move":
      onMove(message);
      break;
  }
}

function onMove(message) {
  const game = state.games.get(message.game);
  if (game) {
    game.plies = message.move.ply;
    game.clock = message.clock;
    const line = document.querySelector(`li[data-game="${CSS.escape(game.id)}"] .result`);
    if (line) line.textContent = `${game.id}: ${resultText(game)}`;
  }
  if (state.loading === message.game) {
    state.pending.push(message);
    return;
  }
  const doc = state.doc;
  if (!doc || doc.id !== message.game || !doc.board) return;
  const have = doc.moves.length;
  const outcome = addMove(message);
  if (outcome === "gap") openGame(doc.id, state.follow ? {} : { ply: state.ply });  // missed some: fetch again
  if (outcome !== "added") return;
  $("moves").append(moveItem(message.move, have));
  if (state.follow) seek(doc.moves.length);
  else {
    renderControls();
    renderGraph();
    if (state.ply === have) renderArrows();  // the line drawn at the ply shown depends on the move after it
  }
  renderHead();
}

let socket = null;

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/api/live`);
  $("connection").dataset.state = "connecting";
  $("connection").textContent = "connecting";
  socket.addEventListener("open", () => {
    $("connection").dataset.state = "open";
    $("connection").textContent = "live";
  });
  socket.addEventListener("message", (event) => onMessage(JSON.parse(event.data)));
  socket.addEventListener("close", () => {
    $("connection").dataset.state = "closed";
    $("connection").textContent = "disconnected: retrying";
    setTimeout(connect, 1500);
  });
}

// --- controls --------------------------------------------------------------------------------------------

function wire() {
  $("first").addEventListener("click", () => browse(0));
  $("back").addEventListener("click", () => browse(state.ply - 1));
  $("forward").addEventListener("click", () => browse(state.ply + 1));
  $("last").addEventListener("click", () => browse(state.doc ? state.doc.moves.length : 0));
  $("seek").addEventListener("input", (event) => browse(Number(event.target.value)));
  $("graph").addEventListener("click", graphClick);
  window.addEventListener("resize", () => {
    if (state.doc && state.doc.board) {
      renderArrows();
      renderGraph();
    }
  });
  $("follow").addEventListener("change", (event) => {
    state.follow = event.target.checked;
    if (state.follow && state.doc) browse(state.doc.moves.length);
  });
  for (const button of document.querySelectorAll("button.view")) {
    button.addEventListener("click", () => {
      state.view = button.dataset.view;
      if (state.doc && state.doc.board) {
        renderHead();
        renderBoard();
        writeHash();
      }
    });
  }
  document.addEventListener("keydown", (event) => {
    if (event.target instanceof HTMLInputElement && event.target.type !== "range") return;
    if (event.key === "ArrowLeft") browse(state.ply - 1);
    else if (event.key === "ArrowRight") browse(state.ply + 1);
  });
  setInterval(renderClock, 200);
}

async function start() {
  wire();
  const response = await fetch("/api/games");
  const data = await response.json();
  state.games = new Map(data.games.map((g) => [g.id, g]));
  state.standings = data.standings;
  renderList();
  renderStandings();
  const wanted = readHash();
  if (wanted.game) {
    await openGame(wanted.game, { ply: wanted.ply, view: wanted.view, auto: false });
  } else {
    autoOpen();  // the live game, else the newest finished one
  }
  connect();
}

start();
