// Command bench is the load harness of the platform: on one machine and in
// one run it starts a real redis-server on a free port (or a Redis Cluster), builds and starts
// the authserver, the resourceserver and a ceiling server (package
// ceiling: a bare Gin handler, a Gin handler making one Redis round
// trip, and the endpoints' floors), creates clients with rate limits high enough never to refuse, and
// drives each endpoint with wrk at a fixed concurrency:
//
//   - token:      POST /api/v1/oauth/token/ (HTTP Basic, rotating over clients)
//   - token-tls, token-tls-keepalive: the token load over TLS ended by a
//     second authserver (--tls-cert), each request with a client
//     certificate, a new connection per request or kept ones; a Go load
//     generator (tlsload.go), as wrk presents no client certificate
//   - me:         GET  /api/v1/me/ (bearer tokens, rotating over clients)
//   - me-dpop:    GET  /api/v1/me/ with DPoP-bound tokens (Authorization:
//     DPoP and a DPoP proof per request, RFC 9449 section 7.1)
//   - introspect: POST /api/v1/oauth/introspect/ (each client its own token)
//   - bare:       the ceiling's GET /bare, a fixed body as long as /me's
//   - redis:      the ceiling's GET /redis, one EVALSHA, then the same body
//   - sign:       the ceiling's POST /sign under the token load: the same
//     request read, one EVALSHA, a token signed by pkg/accesstoken with the
//     authserver's keys, the token endpoint's answer. The floor issue 28
//     names for the token (signature, HTTP, one round trip), without the
//     client's authentication, the limits and the access record; the
//     targets table gives both ratios for context
//   - admit:      the ceiling's GET /admit under the /me load: the
//     resourceserver's bearer admission (pkg/admission: the cached token
//     check, the admission script through the pipeliner as the
//     resourceserver runs it), then the fixed body. /me's floor, without
//     its answer, access record and metrics; the targets table gives its
//     ratio to the Gin + 1 EVALSHA ceiling and /me's to it, for context
//   - authsign:   the ceiling's POST /authsign under the token load: sign's
//     floor with the client's authentication as its one round trip (the
//     registry's authentication script through the pipeliner, as the
//     authserver runs it: the failure accounting, the scope, the token
//     limit), the token signed for the client it authenticated. The
//     token's floor with what the spec asks of Redis per token request,
//     without go-oauth2's Manager, the form's parsing, the error shapes,
//     the request id, access record and metrics
//   - authcheck:  the ceiling's POST /authcheck under the introspection
//     load: introspection's floor (the form's token through the cached
//     verifier, the caller's authentication with that token's standing in
//     the same round trip, the claims answered as introspection answers)
//     without the authserver's layers; the targets table gives both floors'
//     ratios to bare Gin and the endpoints' to them, for context
//
// me-dpop's tokens are minted per registry size by token requests carrying
// a proof (pkg/dpop/dpoptest keys, one per load client). Proofs are single
// use and accepted only within 60 s of their iat (pkg/dpop DefaultWindow),
// and wrk's Lua cannot sign them: right before its warm-up and again right
// before its measured run, the harness signs one proof per request
// (2 x the larger of the last req/s of me-dpop and of me, x the duration; htu the
// resourceserver's URL plus /api/v1/me/, ath of the line's token, iat now)
// into one file per wrk thread, each thread sending each of its lines
// once; its runs are capped at 30 s so every proof is sent while fresh.
// A run in which a thread ran out of proofs (the script counts its sends
// past its lines) is measured again, at most twice, with proofs for the
// rate it reached: the harness's shortfall is never reported as refusals.
// After the run the replay records ({CLIENT}:dpop:*, those of the warm-up
// deleted before it) are counted and MEMORY USAGE-sampled: the report gives
// bytes per record and the memory they hold at the measured rate (req/s x
// dpop.ReplayTTL, 66 s, x bytes).
//
// It repeats every scenario, at every registry size (the number of clients
// in Redis), and prints a Markdown report: its Redis topology, the exact
// command, the machine (CPU model, CPUs, cores, kernel, tools), the
// settings, the targets met and missed, then a table of medians: successful requests per
// second, latency percentiles, errors, CPU time per request of the server and
// of Redis, peak RSS, the ratios to the two ceilings, and PASS or MISS per
// target of the performance issue. Every run is listed too, with its read
// and write system calls per request, the server's and Redis's (how many
// requests shared one pipelined write).
//
//	go run ./deploy/bench [--concurrency 64] [--duration 20s] [--reps 3]
//	                      [--clients 1,1000,100000] [--scenarios A,B] [--out FILE] [--quick]
//	                      [--autopipeline[=auto|true|false]] [--redis-cluster N [--redis-cluster-replicas R]]
//	                      [--hydra-bin PATH] [--pgo-out DIR] [--profiles DIR] [--admin]
//
// --admin runs the token service with its admin listener on a free
// loopback port, as a deployment with the operator console has it: the
// console's usage sampler then reads every client's limiter windows once a
// minute beside the measured load (off by default).
//
// --redis-cluster N runs a Redis Cluster of N primaries instead of the one
// redis-server (0, the default: one node), each with R replicas
// (--redis-cluster-replicas): N x (1 + R) redis-servers in cluster mode on
// free loopback ports, without persistence, joined and given the 16384
// slots evenly through go-redis (CLUSTER MEET, ADDSLOTSRANGE, REPLICATE),
// used once every node reports cluster_state:ok and every replica is in
// sync. The servers, the ceiling and the seeding get a redis+cluster://
// URL. Redis CPU per request is then the sum over every node; the report
// names the topology and adds each node's CPU per request.
//
// --hydra-bin PATH also starts Ory Hydra (a binary built by
// deploy/bench/hydra/build.sh DIR [VERSION], v2.3.0 by default, from the Go
// module proxy: nothing of Hydra is in this repository) with serve all
// --dev, DSN=memory, opaque tokens and LOG_LEVEL=warn on free loopback
// ports, creates clients through its admin API (client_credentials,
// client_secret_basic) and a token for each, and adds two scenarios to the
// same repetitions, at the largest registry:
//
//   - hydra-token:      Hydra's POST /oauth2/token (HTTP Basic, rotating over its clients)
//   - hydra-introspect: Hydra's POST /admin/oauth2/introspect (rotating over the tokens;
//     no client authentication, where ours authenticates the caller)
//
// The report then compares token and introspection side by side (req/s,
// median of per-repetition ratios, CPU per request) and checks issue 28's
// "tokens at least 30x and introspection at least 6x Hydra's req/s". A
// repetition in which Hydra answered no 2xx compares nothing: the target
// says in how many repetitions it compares and passes only when those are
// most, and the run's errors give Hydra's answer to one more request.
//
// --pgo-out DIR starts the servers with their profiles on (PPROF=true, on
// a metrics port the harness picks), takes a CPU profile of each server
// through every token and introspect run (the authserver) and me run (the
// resourceserver), for the run's --duration, and merges them per server
// with go tool pprof -proto into DIR/authserver/release.pgo and
// DIR/resourceserver/release.pgo: the profiles the release build
// (deploy/Dockerfile, and this harness) gives go build -pgo. From the
// module's root, --pgo-out . refreshes the committed ones. The report's
// settings name the profile each binary under test was built with (go
// version -m).
//
// --profiles DIR takes a CPU profile of the process serving every run at
// the largest registry (the servers through their PPROF listener, the
// ceiling through its --pprof-addr; not Hydra), keeps it as
// DIR/<scenario>-<rep>.pb.gz, and adds "Where the CPU goes" to the report
// (cpuparts.go): each scenario's CPU per request by part (Ed25519,
// go-redis, the access record, metrics, jwx, go-oauth2, Gin, net/http's
// reading and writing, pkg/httpserver, our code, the collector, the rest),
// read with github.com/google/pprof/profile, each sample under the
// innermost frame a part names, pooled over the repetitions; and each
// endpoint's CPU over its floor's (token over authsign, introspect over
// authcheck, me over admit), part by part, with Redis's CPU beside and a
// sentence naming the largest parts: what issue 28 asks of a missed
// target, where the time goes and what floor remains, from one command.
//
// The report also lists every run with its "machine share", the fraction
// of the machine's CPU that the server, Redis and wrk got: on a shared
// machine a low share marks a run disturbed by other work.
//
// --out FILE also writes the report into FILE, the results file
// (results.go) that only the harness writes: a generated header, then one
// section per Redis topology (one node; a Redis Cluster under
// --redis-cluster), each the report of that topology's latest run between
// marker lines carrying its checksum. A run replaces its topology's
// section and keeps the other's; the harness refuses, before it starts, a
// FILE it did not write or whose sections were edited by hand. The
// module's is deploy/bench/RESULTS.md:
//
//	go run ./deploy/bench --out deploy/bench/RESULTS.md
//	go run ./deploy/bench --redis-cluster 3 --redis-cluster-replicas 1 --out deploy/bench/RESULTS.md
//
// A scenario is one row of the scenario table (scenarios.go): its name,
// label, the server and path it loads, the kind of load (a wrk script
// under wrk/), its floors and what it is compared with.
//
// It needs redis-server and wrk (Debian packages redis-server and wrk);
// --install runs apt-get for whichever is missing.
package main
