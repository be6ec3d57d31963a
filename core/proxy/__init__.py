"""`ctxtui proxy`: watch any Messages-API or OpenAI-format client's context by passing its requests through a loopback proxy.

- `server`: the HTTP side (aiohttp): forwards `/v1/...` to the upstream (OpenAI's paths to theirs), bytes unchanged.
- `watch`: turns each `/v1/messages` exchange into a `ProxyCall` and publishes events
  (`async for event in watch.events()`); records them unless told not to.
- `openai`: OpenAI's wire formats (`/v1/chat/completions`, `/v1/responses`) read into the same model:
  requests, replies and streams converted to the Messages API's shape, usage as reported.
- `calls`: the records a view consumes (ProxyCall, Conversation, CallStarted, CallFinished).
- `diff`: what changed between two requests of a conversation, as exact splices.
- `record`: the recording files (`.ctxtui/proxy/<id>.jsonl`) and reading them back.
- `sse`: the reply rebuilt from the bytes the client got (a JSON body or an SSE stream).
- `http`: which headers travel, which are recorded, which are secret; loopback, path and hop checks.
- `limits`: what one exchange may hold in memory and on disk (request, recorded body, kept reply).
- `redact`: credentials and key-shaped text out of everything the proxy shows or writes.
"""
