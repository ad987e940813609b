package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// benchOrg is the organisation every bench client belongs to.
const benchOrg = "bench"

// client is a bench client: its credentials and, once fetched, a token.
type client struct {
	ID, Secret, Token string
}

// basic is the client's HTTP Basic Authorization value (RFC 6749 section
// 2.3.1: id and secret form-urlencoded, then base64).
func (c client) basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(c.ID)+":"+url.QueryEscape(c.Secret)))
}

// registry grows the client registry in Redis and hands out the clients the
// load is spread over.
type registry struct {
	authBin  string
	redisURL string
	store    *clients.Store
	http     *http.Client
	tokenURL string
	log      func(format string, a ...any)

	all []client
	// boosted marks clients whose token limit was raised.
	boosted map[string]bool
	// tokens caches one token per client id.
	tokens map[string]string
}

// operator runs an authserver operator command against the bench Redis.
func (r *registry) operator(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.authBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "REDIS_URL=" + r.redisURL}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("authserver %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return nil, fmt.Errorf("authserver %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// allScopes is every scope: the bench clients are hospital clients holding
// all four, so tokens and /me bodies are as large as they get.
var allScopes = strings.Join(clients.AllScopes, " ")

// grow creates clients until the registry holds size of them. The first
// one is made the way an operator would, with the authserver CLI (orgs
// create, clients create --json, clients set-rate-limit --token); the rest
// are written straight through clients.Store.CreateClient from many
// goroutines, since 100,000 CLI runs would take most of an hour.
func (r *registry) grow(ctx context.Context, size int) error {
	if len(r.all) == 0 {
		if _, err := r.operator(ctx, "orgs", "create", "--slug", benchOrg, "--name", "Bench", "--environment", "live", "--json"); err != nil {
			return err
		}
		out, err := r.operator(ctx, "clients", "create", "--org", benchOrg, "--name", clientName(0), "--audience", clients.AudienceHospital,
			"--scopes", allScopes, "--rate-limit", strconv.Itoa(clients.MaxRateLimitPerMinute), "--json")
		if err != nil {
			return err
		}
		var created struct {
			ID     string `json:"client_id"`
			Secret string `json:"client_secret"`
		}
		if err := json.Unmarshal(out, &created); err != nil || created.ID == "" || created.Secret == "" {
			return fmt.Errorf("clients create --json: unexpected output %q", out)
		}
		if _, err := r.operator(ctx, "clients", "set-rate-limit", created.ID, strconv.Itoa(clients.MaxRateLimitPerMinute), "--token", "--json"); err != nil {
			return err
		}
		r.all = append(r.all, client{ID: created.ID, Secret: created.Secret})
		r.boosted[created.ID] = true
	}
	n := size - len(r.all)
	if n <= 0 {
		return nil
	}
	start := time.Now()
	created := make([]client, n)
	base := len(r.all)
	var (
		wg       sync.WaitGroup
		next     = make(chan int)
		mu       sync.Mutex
		firstErr error
	)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				c, secret, err := r.store.CreateClient(ctx, clients.ClientSpec{
					OrgSlug: benchOrg, Name: clientName(base + i), Audience: clients.AudienceHospital,
					Scopes: clients.AllScopes, RateLimitPerMinute: clients.MaxRateLimitPerMinute,
				})
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					continue
				}
				created[i] = client{ID: c.ID, Secret: secret}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("create clients: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.all = append(r.all, created...)
	r.log("created %d clients through clients.Store in %s (%.0f/s)", n, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
	return nil
}

// clientName names bench client i; every name has the same length, so
// every /me body has too.
func clientName(i int) string { return fmt.Sprintf("bench-%07d", i) }

// loadSet returns n clients spread evenly over the whole registry, the
// first client included, each with its token limit raised and a token.
func (r *registry) loadSet(ctx context.Context, n int) ([]client, error) {
	n = min(n, len(r.all))
	set := make([]client, n)
	for i := range n {
		set[i] = r.all[i*len(r.all)/n]
	}
	return set, r.prepareAll(ctx, set)
}

// hotSet returns the n clients of the hot scenarios (the newest ones, every
// bench client holding the highest limits), each with a token.
func (r *registry) hotSet(ctx context.Context, n int) ([]client, error) {
	n = min(n, len(r.all))
	set := slices.Clone(r.all[len(r.all)-n:])
	return set, r.prepareAll(ctx, set)
}

// prepareAll prepares every client of set, 16 at a time.
func (r *registry) prepareAll(ctx context.Context, set []client) error {
	var (
		wg       sync.WaitGroup
		next     = make(chan int)
		mu       sync.Mutex
		firstErr error
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				err := r.prepare(ctx, &set[i], &mu)
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range set {
		next <- i
	}
	close(next)
	wg.Wait()
	return firstErr
}

// prepare raises c's token limit (once) and gets it a token (once).
func (r *registry) prepare(ctx context.Context, c *client, mu *sync.Mutex) error {
	mu.Lock()
	boosted, token := r.boosted[c.ID], r.tokens[c.ID]
	mu.Unlock()
	if !boosted {
		if _, err := r.store.SetTokenRateLimit(ctx, c.ID, clients.MaxRateLimitPerMinute); err != nil {
			return fmt.Errorf("raise token limit of %s: %w", c.ID, err)
		}
	}
	if token == "" {
		var err error
		if token, err = r.fetchToken(ctx, *c); err != nil {
			return err
		}
	}
	mu.Lock()
	r.boosted[c.ID], r.tokens[c.ID] = true, token
	mu.Unlock()
	c.Token = token
	return nil
}

// fetchToken asks the token endpoint for a token of c.
func (r *registry) fetchToken(ctx context.Context, c client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.tokenURL, strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", c.basic())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := r.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("token for %s: %w", c.ID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		return "", fmt.Errorf("token for %s: %d %s", c.ID, resp.StatusCode, body)
	}
	return tok.AccessToken, nil
}

// clearRateLogs deletes every rate-limit log, so that each run starts from
// empty windows whatever ran before it within the minute. On a Cluster it
// scans every primary and deletes key by key (a batch of keys of several
// slots would be refused).
func clearRateLogs(ctx context.Context, rdb redis.UniversalClient) error {
	if err := clearKeys(ctx, rdb, "*:rw:*"); err != nil {
		return fmt.Errorf("clear rate-limit logs: %w", err)
	}
	return nil
}

// clearKeys deletes every key matching pattern on every primary.
func clearKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) error {
	_, cluster := rdb.(*redis.ClusterClient)
	return forEachPrimary(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, pattern, 10000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 && !cluster {
				if err := node.Unlink(ctx, keys...).Err(); err != nil {
					return err
				}
			}
			if len(keys) > 0 && cluster {
				pipe := node.Pipeline()
				for _, k := range keys {
					pipe.Unlink(ctx, k)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
}

// usedMemory is Redis's used_memory (INFO memory), in bytes: on a Cluster,
// the sum over the primaries.
func usedMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var (
		mu    sync.Mutex
		total int64
	)
	err := forEachPrimary(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		info, err := node.Info(ctx, "memory").Result()
		if err != nil {
			return fmt.Errorf("INFO memory: %w", err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return err
				}
				mu.Lock()
				total += n
				mu.Unlock()
				return nil
			}
		}
		return errors.New("INFO memory: no used_memory")
	})
	return total, err
}

// redisInfo describes the registry's footprint in Redis.
func redisInfo(ctx context.Context, rdb redis.UniversalClient) string {
	keys, err := rdb.DBSize(ctx).Result()
	if err != nil {
		return "unknown"
	}
	if _, ok := rdb.(*redis.ClusterClient); ok {
		used, err := usedMemory(ctx, rdb)
		if err != nil {
			return fmt.Sprintf("%d keys", keys)
		}
		return fmt.Sprintf("%d keys, used_memory %.2fM summed over the primaries", keys, float64(used)/(1<<20))
	}
	info, _ := rdb.Info(ctx, "memory").Result()
	mem := ""
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory_human:"); ok {
			mem = v
		}
	}
	return fmt.Sprintf("%d keys, used_memory %s", keys, mem)
}
