// Package chatpage is the chat page of the reference server (examples/serve
// at GET /): a few static files embedded in the binary, with no build step,
// no framework and no request to any other host. The page talks to the
// server it came from through the same OpenAI-compatible endpoints every
// other client uses (GET /v1/models, GET /health, POST /v1/chat/completions)
// and keeps the conversation in the browser only.
//
// The files are served with a Content-Security-Policy that allows the page's
// own origin and nothing else, so neither a script nor a style nor a fetch
// can reach another host. They are the only routes a server with an API key
// leaves open (Public): the page must load to ask for the key, and it holds
// nothing the key protects.
package chatpage
