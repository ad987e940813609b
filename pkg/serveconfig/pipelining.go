package serveconfig

import (
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Pipelining is --redis-autopipeline (REDIS_AUTOPIPELINE): whether a
// server sends its per-request Redis scripts through go-redis's automatic
// pipelining (clients.Store.UseAutoPipeline). Its zero value is auto: on
// with one Redis node, off with a Sentinel-managed primary and on a
// Cluster. A boolean (as strconv.ParseBool reads it) turns it on or off
// everywhere.
//
// Why not on with Sentinel or a Cluster (README: REDIS_AUTOPIPELINE): a
// frozen primary (SIGSTOP) holds the pipeliner's batches for the command
// budget, and requests queued behind them wait for a batch of their own
// after that, so some are answered after more than 2 s: TestFreeze/cluster
// fails at times (the other shards' requests share the frozen shard's
// batches), and TestFreeze/sentinel failed once in CI (7 of 501 requests
// answered 503 after 2.014-2.033 s, 2026-11-27). On a Cluster, go-redis
// v9.23's cluster pipeline also re-sends a whole batch when its first
// command is answered TRYAGAIN, commands that already ran included. Every
// failure suite of one node passes with it on (.ci/run runs them with it
// off as well, and the replicated ones with it on).
//
// It is a flag.Value whose bare flag means true, as a boolean flag's does.
type Pipelining struct {
	set, on bool
}

// PipeliningOn and PipeliningOff are the settings true and false.
var (
	PipeliningOn  = Pipelining{set: true, on: true}
	PipeliningOff = Pipelining{set: true}
)

// ParsePipelining reads "auto" (or "") or a boolean.
func ParsePipelining(s string) (Pipelining, error) {
	var p Pipelining
	err := p.Set(s)
	return p, err
}

// Set implements flag.Value.
func (p *Pipelining) Set(s string) error {
	if s == "" || s == "auto" {
		*p = Pipelining{}
		return nil
	}
	on, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want auto, true or false (or 1 or 0)")
	}
	*p = Pipelining{set: true, on: on}
	return nil
}

// String implements flag.Value: auto, true or false.
func (p *Pipelining) String() string {
	if p == nil || !p.set {
		return "auto"
	}
	return strconv.FormatBool(p.on)
}

// IsBoolFlag lets --redis-autopipeline stand alone for true.
func (p *Pipelining) IsBoolFlag() bool { return true }

// Auto reports whether p is auto (REDIS_AUTOPIPELINE unset).
func (p Pipelining) Auto() bool { return !p.set }

// On reports whether a server on rdb pipelines: as set, else (auto) only
// when rdb is a client of one node. A Sentinel-managed client is a
// *redis.Client too; go-redis (v9.23, sentinel.go, NewFailoverClient)
// names its address "FailoverClient", which TestPipeliningOn checks on a
// real one.
func (p Pipelining) On(rdb redis.UniversalClient) bool {
	if p.set {
		return p.on
	}
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().Addr != failoverAddr
}

// failoverAddr is the address go-redis gives a Sentinel-managed client.
const failoverAddr = "FailoverClient"
