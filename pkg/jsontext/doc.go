// Package jsontext writes JSON text (RFC 8259) by hand for the answers
// every request gets: GET /api/v1/me/'s body (resourceserver/api) and
// introspection's (authserver/tokenserver). AppendString appends a string
// byte for byte as encoding/json writes it without HTML escaping
// (Encoder.SetEscapeHTML(false)), so a body written with it is the body
// encoding/json would write; each writer holds its own to encoding/json's
// output in its tests.
//
// Why by hand, when encoding/json is the library for it: its reflection
// encoder, and the interface value it takes, cost a /me call 3.7 µs of the
// resourceserver's 80 µs of CPU under the load harness on a 3 x 1 Cluster
// (deploy/bench/RESULTS.md, the profile of 2026-11-29 21:54 UTC); written
// by hand, /me's body takes 150-170 ns and no allocation against 670-860
// ns and one (BenchmarkMeBody). Every other answer keeps encoding/json.
package jsontext
