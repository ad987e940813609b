// Package httpserver runs the services' HTTP servers the same way: timeouts
// that bound slow clients, a header size cap, graceful shutdown when the
// context ends (SIGTERM), and the health check command both binaries share
// (Healthcheck, ProbeURL), which the container images use in place of curl.
package httpserver
