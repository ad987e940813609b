package serveconfig

import (
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Pipelining is --redis-autopipeline (REDIS_AUTOPIPELINE): whether a
// server sends its per-request Redis scripts through go-redis's automatic
// pipelining (clients.Store.UseAutoPipeline). Its zero value is auto: on
// with one Redis node or a Sentinel-managed primary, off on a Cluster. A
// boolean (as strconv.ParseBool reads it) turns it on or off everywhere.
//
// Why not on for a Cluster (README: REDIS_AUTOPIPELINE): go-redis v9.23's
// pipeliner batches the scripts of several shards together, so a frozen
// primary holds the other shards' requests of its batches with it
// (TestFreeze/cluster fails at times), and its cluster pipeline re-queues a
// whole batch when its first command is answered TRYAGAIN, commands that
// already ran included (a request counted twice while a slot moves). Every
// failure suite of one node and Sentinel passes with it on (.ci/run runs
// them with it off as well).
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

// On reports whether a server on rdb pipelines: as set, else (auto) unless
// rdb is a Cluster client.
func (p Pipelining) On(rdb redis.UniversalClient) bool {
	if p.set {
		return p.on
	}
	_, cluster := rdb.(*redis.ClusterClient)
	return !cluster
}
