package serveconfig

import (
	"errors"
	"strconv"
)

// Pipelining is --redis-autopipeline (REDIS_AUTOPIPELINE): whether a
// server sends its per-request Redis scripts through go-redis's automatic
// pipelining (clients.Store.UseAutoPipeline). Its zero value is auto, the
// default: on, with one Redis node, a Sentinel-managed primary and on a
// Cluster alike. A boolean (as strconv.ParseBool reads it) turns it on or
// off.
//
// Every failure suite passes with it on (.ci/run runs them with it on, the
// default, and the replicated ones once more with it off): Redis killed
// and connections killed under load, a primary killed or frozen (SIGSTOP)
// under load with Sentinel and on a Cluster, a slot moved under load,
// replica links cut. A frozen primary is why a caller waits for its
// script no longer than the command budget (luascript.Script.Submit) and
// why a Cluster's pipeliner runs one connection per primary
// (redisconn.AutoPipelineOptions): before both, TestFreeze answered some
// requests after more than 2 s (with Sentinel 7 of 501 after 2.014-2.033 s
// in one CI run) and, on a Cluster, requests of the other shards waited for
// the frozen one's batches.
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

// On reports whether a server pipelines: as set, else (auto) yes.
func (p Pipelining) On() bool { return !p.set || p.on }
