/**
 * A websocket that reconnects with exponential backoff and jitter, and parses JSON messages: the
 * client of the live protocol of `/ws/traces/<id>/`, `/ws/runs/<id>/` and `/ws/projects/<id>/`
 * (swarmscope/protocol.py; schemas in swarmscope/protocol_schema.py). With `seq`, each reconnect
 * asks for what came after the last seq applied (`?seq=N`); `resume(N)` asks on an open socket.
 * The WebSocket class and the timer are injectable so tests can drive it without a network.
 */

/** Backoff after `attempt` failed tries: `initial * 2^attempt`, capped, times a jitter in [0.5, 1). */
export function backoffDelay(attempt, { initial = 500, max = 30000, random = Math.random } = {}) {
  return Math.min(max, initial * 2 ** attempt) * (0.5 + random() / 2);
}

/** An http(s) page's ws(s) URL for `url`, which may be a path ("/ws/traces/1/") or absolute. */
export function websocketUrl(url, location = globalThis.location) {
  if (/^wss?:\/\//.test(url)) return url;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${url.startsWith("/") ? "" : "/"}${url}`;
}

/** `url` with the query parameter `name=value` added. */
export function withParam(url, name, value) {
  return `${url}${url.includes("?") ? "&" : "?"}${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
}

/** Close codes after which reconnecting cannot help: 4401 (the token or session is no longer
 * valid: revoked, deactivated, logged out) and 4404 (no access to the object). */
export const NO_ACCESS_CODES = Object.freeze([4401, 4404]);

export class LiveConnection {
  /**
   * @param {string|(() => string)} url ws(s) URL, or a function giving it at each (re)connect
   * @param {{onMessage: (msg: object) => void, onOpen?: () => void,
   *   onState?: (state: "connecting"|"open"|"reconnecting"|"closed") => void,
   *   onClose?: (code: number|undefined) => void, finalCodes?: number[], seq?: () => (number|null),
   *   WebSocketImpl?: typeof WebSocket, setTimer?: (fn: () => void, ms: number) => unknown,
   *   clearTimer?: (id: unknown) => void, backoff?: object}} options `seq` gives the last seq
   *   applied (null before the first snapshot); a close with one of `finalCodes` (default
   *   NO_ACCESS_CODES) stops reconnecting.
   */
  constructor(url, { onMessage, onOpen = () => {}, onState = () => {}, onClose = () => {}, finalCodes = NO_ACCESS_CODES,
    seq = () => null, WebSocketImpl = globalThis.WebSocket, setTimer = (fn, ms) => setTimeout(fn, ms),
    clearTimer = (id) => clearTimeout(id), backoff = {} }) {
    this.url = url;
    this.onMessage = onMessage;
    this.onOpen = onOpen;
    this.onState = onState;
    this.onClose = onClose;
    this.finalCodes = finalCodes;
    this.seq = seq;
    this.WebSocketImpl = WebSocketImpl;
    this.setTimer = setTimer;
    this.clearTimer = clearTimer;
    this.backoff = backoff;
    this.attempt = 0;
    this.socket = null;
    this.timer = null;
    this.stopped = false;
    this.state = "closed";
  }

  /** Connect (and keep reconnecting until `close()`). */
  start() {
    this.stopped = false;
    this._connect();
  }

  /** Send `msg` as JSON; returns false when the socket is not open. */
  send(msg) {
    if (!this.socket || this.socket.readyState !== 1) return false;
    this.socket.send(JSON.stringify(msg));
    return true;
  }

  /** Ask for everything after `seq` (`{"type": "resume", "seq": N}`); false when not open. */
  resume(seq) {
    return this.send({ type: "resume", seq });
  }

  /** The URL of the next (re)connect: `url`, with `?seq=N` once a seq was applied. */
  connectUrl() {
    const url = typeof this.url === "function" ? this.url() : this.url;
    const seq = this.seq();
    return seq === null || seq === undefined ? url : withParam(url, "seq", seq);
  }

  /** Close for good. */
  close() {
    this.stopped = true;
    if (this.timer !== null) this.clearTimer(this.timer);
    this.timer = null;
    this.socket?.close();
    this._setState("closed");
  }

  _setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.onState(state);
  }

  _connect() {
    this.timer = null;
    this._setState(this.attempt === 0 ? "connecting" : "reconnecting");
    const socket = new this.WebSocketImpl(this.connectUrl());
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this._setState("open");
      this.onOpen();
    };
    socket.onmessage = (event) => {
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch {
        return; // not ours: ignore
      }
      this.onMessage(msg);
    };
    socket.onclose = (event) => {
      if (socket !== this.socket || this.stopped) return;
      this.onClose(event?.code);
      if (this.finalCodes.includes(event?.code)) {
        this.stopped = true;
        this._setState("closed");
        return;
      }
      this._setState("reconnecting");
      this.timer = this.setTimer(() => this._connect(), backoffDelay(this.attempt, this.backoff));
      this.attempt += 1;
    };
    socket.onerror = () => {}; // a close event follows and schedules the retry
  }
}
