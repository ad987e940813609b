// Package httpserver runs the services' HTTP servers the same way. Base is
// the HTTP layer both put in front of their routes (plain net/http
// middleware; the resource server mounts its Gin engine inside it): request
// id, body limit, panic recovery and one access record per request, with
// attributes handlers add through Annotate. Serve gives both: timeouts
// that bound slow clients, a header size cap, a limit on the connections
// served at once (MaxConns, sized by default from the open file limit, with
// keep-alive switched off near it so idle connections never hold the
// slots), the connection closed after a request that carried both
// Content-Length and Transfer-Encoding (RFC 9112 section 6.1), graceful
// shutdown when the context ends (SIGTERM), and the health check command
// both binaries share (Healthcheck, ProbeURL), which the container images
// use in place of curl.
package httpserver
