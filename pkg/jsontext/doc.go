// Package jsontext writes JSON text (RFC 8259) by hand for the answers
// every request gets: GET /api/v1/me/'s body (resourceserver/api), the
// token's and introspection's (authserver/tokenserver). AppendString
// appends a string byte for byte as encoding/json writes it without HTML
// escaping (Encoder.SetEscapeHTML(false), the resourceserver's encoder),
// AppendHTMLString as json.Marshal writes it (the token service's), so a
// body written with them is the body encoding/json would write; each
// writer holds its own to encoding/json's output in its tests
// (jsontexttest).
//
// Why by hand, when encoding/json is the library for it: writing /me's
// body cost 3.7 µs of the resourceserver's 80 µs of CPU per call under the
// load harness on a 3 x 1 Cluster, the reflection encoder 1.7 µs of it
// (its CPU profile: go run ./deploy/bench --redis-cluster 3
// --redis-cluster-replicas 1 --scenarios admit,me --profiles DIR); written
// by hand, the body takes 150-170 ns and no allocation against 670-860 ns
// and one for the encoder and the interface value it takes
// (BenchmarkMeBody). Every other answer keeps encoding/json.
package jsontext
