"""Websockets: consumers, routing, and broadcast (the only place that sends to channel groups)."""
