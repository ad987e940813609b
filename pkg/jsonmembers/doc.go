// Package jsonmembers checks the member names of a JSON object before it is
// decoded: no name twice (under the Unicode case folding encoding/json
// matches names with), no case variant of a name the caller reads, nothing
// after the object. encoding/json keeps the last of two equal names and
// matches names case-insensitively, so without this check two parsers may
// read different values from one signed object (RFC 7515 section 5.2, RFC
// 8259 section 4: names "SHOULD be unique"). It is the one such check of
// access tokens (pkg/accesstoken) and DPoP proofs (pkg/dpop).
//
// DepthWithin bounds the nesting of a body in one pass over its bytes,
// before any decoder walks it: the admin API refuses a body nested more
// than 32 deep with it (authserver/adminapi, decode).
package jsonmembers
