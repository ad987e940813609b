package clients_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// env is one store under test together with what the suite needs to look
// behind it: the Redis it writes to, the key prefix it writes under, and the
// clock it stamps records with.
type env struct {
	store  *clients.Store
	rdb    redis.UniversalClient
	prefix string
	clock  *fakeClock
}

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// TestStore runs the conformance suite against the real test Redis, an
// in-process miniredis, a Redis Cluster and a Sentinel group: all must
// behave alike. On the replicated ones every change waits for a replica,
// as the servers' REDIS_URL makes it by default there.
func TestStore(t *testing.T) {
	t.Parallel()
	for _, b := range redistest.AllBackends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel() // each backend is a Redis of its own, each test a prefix
			conf, err := redisconn.ConfirmationOf(b.URL)
			if err != nil {
				t.Fatal(err)
			}
			if b.URL == "" {
				conf.Replicas = 0
			}
			runStoreSuite(t, false, func(t *testing.T, now func() time.Time) (*clients.Store, redis.UniversalClient, string) {
				prefix := redistest.Prefix(t, b.Client)
				store := clients.NewStore(b.Client, prefix, now)
				store.ConfirmWrites(conf)
				return store, b.Client, prefix
			})
		})
		// The per-request scripts through go-redis's automatic pipelining
		// (REDIS_AUTOPIPELINE) behave alike, on a node and on Cluster.
		if b.Name != "redis" && b.Name != "cluster" {
			continue
		}
		t.Run(b.Name+"-autopipeline", func(t *testing.T) {
			t.Parallel()
			conf, err := redisconn.ConfirmationOf(b.URL)
			if err != nil {
				t.Fatal(err)
			}
			runStoreSuite(t, true, func(t *testing.T, now func() time.Time) (*clients.Store, redis.UniversalClient, string) {
				prefix := redistest.Prefix(t, b.Client)
				store := clients.NewStore(b.Client, prefix, now)
				store.ConfirmWrites(conf)
				if err := store.UseAutoPipeline(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = store.Close() })
				return store, b.Client, prefix
			})
		})
	}
}

// runStoreSuite is the conformance suite of clients.Store. newStore returns a
// store on its own key prefix (deleted when the test ends), the Redis it
// uses and that prefix: several tests read the raw keys to check what is
// (and is not) stored, their TTLs and their hash tags.
//
// The tests marked long (thousands of script calls each) run in the quick
// suite only where quickLong is set: on the servers' default set-ups, a
// node and a Cluster through automatic pipelining. Elsewhere (pipelining
// off, the Sentinel group, and the in-process miniredis, whose Lua runs
// the scripts 5-10x slower than redis-server under the race detector) they
// run in the long suites (redistest.Long), which CI runs too.
func runStoreSuite(t *testing.T, quickLong bool, newStore func(t *testing.T, now func() time.Time) (*clients.Store, redis.UniversalClient, string)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
		long bool
	}{
		{name: "CreateOrg", fn: testCreateOrg},
		{name: "CreateOrgValidation", fn: testCreateOrgValidation},
		{name: "ListOrgs", fn: testListOrgs},
		{name: "CreateClient", fn: testCreateClient},
		{name: "CreateClientValidation", fn: testCreateClientValidation},
		{name: "CreateClientUnknownOrg", fn: testCreateClientUnknownOrg},
		{name: "RotateSecret", fn: testRotateSecret},
		{name: "Revoke", fn: testRevoke},
		{name: "SetRateLimits", fn: testSetRateLimits},
		{name: "GetClient", fn: testGetClient},
		{name: "ListClients", fn: testListClients},
		{name: "Audit", fn: testAudit},
		{name: "NoSecretStored", fn: testNoSecretStored},
		{name: "HashTags", fn: testHashTags},
		{name: "ChangeRetried", fn: testChangeRetried},
		{name: "Operators", fn: testOperators},
		{name: "ListClientPage", fn: testListClientPage},
		{name: "Authenticate", fn: testAuthenticate},
		{name: "AuthenticateScope", fn: testAuthenticateScope},
		{name: "TokenLimit", fn: testTokenLimit},
		{name: "TokenLimitAnyWindow", fn: testTokenLimitAnyWindow, long: true},
		{name: "DPoP", fn: testDPoP},
		{name: "FailureBudget", fn: testFailureBudget},
		{name: "StaleSecretNoLockout", fn: testStaleSecretNoLockout, long: true},
		{name: "FailureTagsBounded", fn: testFailureTagsBounded, long: true},
		{name: "AuthModel", fn: testAuthModel, long: true},
		{name: "ClientKeys", fn: testClientKeys},
		{name: "TLSClients", fn: testTLSClients},
		{name: "AdmitAPI", fn: testAdmitAPI},
		{name: "AdmitAPILimitChanges", fn: testAdmitAPILimitChanges},
		{name: "AdmitAPIAnyWindow", fn: testAdmitAPIAnyWindow, long: true},
		{name: "AdmitAPIDPoPReplay", fn: testAdmitAPIDPoPReplay},
		{name: "AdmitRedisClock", fn: testAdmitRedisClock},
		{name: "RateLogTTL", fn: testRateLogTTL},
		{name: "UnknownIDsWriteNothing", fn: testUnknownIDsWriteNothing},
		{name: "UsageHistory", fn: testUsageHistory},
		{name: "SeedSandbox", fn: testSeedSandbox},
		{name: "SeedSandboxReplacesRevoked", fn: testSeedSandboxReplacesRevoked},
		{name: "SeedSandboxLiveOrg", fn: testSeedSandboxLiveOrg},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long && !quickLong {
				redistest.Long(t)
			}
			t.Parallel()
			clk := newClock()
			store, rdb, prefix := newStore(t, clk.Now)
			tc.fn(t, &env{store: store, rdb: rdb, prefix: prefix, clock: clk})
		})
	}
}

// fakeClock is the tests' hand-moved clock.
type fakeClock = testclock.Clock

func newClock() *fakeClock {
	return testclock.New(time.Date(2031, 3, 14, 15, 9, 26, 535_000_000, time.UTC))
}

// Helpers.

func ctx(t *testing.T) context.Context { return t.Context() }

func (e *env) org(t *testing.T, slug, environment string) clients.Org {
	t.Helper()
	o, err := e.store.CreateOrg(ctx(t), clients.OrgSpec{Slug: slug, Name: "Org " + slug, Environment: environment})
	if err != nil {
		t.Fatalf("CreateOrg(%s): %v", slug, err)
	}
	return o
}

func (e *env) client(t *testing.T, spec clients.ClientSpec) (clients.Client, string) {
	t.Helper()
	c, secret, err := e.store.CreateClient(ctx(t), spec)
	if err != nil {
		t.Fatalf("CreateClient(%+v): %v", spec, err)
	}
	return c, secret
}

// hospital creates an organisation and a hospital client holding every
// scope in it.
func (e *env) hospital(t *testing.T) (clients.Client, string) {
	t.Helper()
	e.org(t, "st-elsewhere", clients.EnvironmentLive)
	return e.client(t, clients.ClientSpec{
		OrgSlug: "st-elsewhere", Name: "Ward system", Audience: clients.AudienceHospital,
		Scopes: clients.AllScopes,
	})
}

// keys lists every key under the test's prefix, sorted.
func (e *env) keys(t *testing.T) []string {
	t.Helper()
	out, err := redistest.Keys(ctx(t), e.rdb, e.prefix+"*")
	if err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return out
}

// keysWith lists the keys under the prefix whose name contains sub.
func (e *env) keysWith(t *testing.T, sub string) []string {
	t.Helper()
	var out []string
	for _, k := range e.keys(t) {
		if strings.Contains(k, sub) {
			out = append(out, k)
		}
	}
	return out
}

// dump returns every string stored in key: field names, values, members,
// scores and stream entries, whatever its type.
func (e *env) dump(t *testing.T, key string) []string {
	t.Helper()
	c := ctx(t)
	typ, err := e.rdb.Type(c, key).Result()
	if err != nil {
		t.Fatalf("TYPE %s: %v", key, err)
	}
	var out []string
	switch typ {
	case "string":
		out = append(out, e.rdb.Get(c, key).Val())
	case "hash":
		for k, v := range e.rdb.HGetAll(c, key).Val() {
			out = append(out, k, v)
		}
	case "set":
		out = append(out, e.rdb.SMembers(c, key).Val()...)
	case "zset":
		for _, z := range e.rdb.ZRangeWithScores(c, key, 0, -1).Val() {
			out = append(out, fmt.Sprint(z.Member), fmt.Sprint(z.Score))
		}
	case "list":
		out = append(out, e.rdb.LRange(c, key, 0, -1).Val()...)
	case "stream":
		for _, m := range e.rdb.XRange(c, key, "-", "+").Val() {
			out = append(out, m.ID)
			for k, v := range m.Values {
				out = append(out, k, fmt.Sprint(v))
			}
		}
	case "none":
	default:
		t.Fatalf("key %s has unexpected type %s", key, typ)
	}
	return out
}

// hashTag is the part of key that Redis Cluster hashes: the text between the
// first "{" and the next "}", when not empty.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return ""
	}
	return key[i : i+j+2]
}
