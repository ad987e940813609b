package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// UsageReader reads what the rate limiter counts of clients now (an
// *operations.Service): a read of the window keys the limiter keeps, made
// on the console's own request, so the token, introspection and /me paths
// do no more work for the pictures.
type UsageReader interface {
	Usage(ctx context.Context, ids []string, now time.Time) ([]clients.Usage, error)
}

// usageView is one client's picture: its API and token windows against
// their limits, and the last minute, per second, as bars.
type usageView struct {
	API, Token           meter
	Bars                 []bar
	Peak                 int64
	Total                int64
	ChartLabel           string
	ChartWidth, ChartTop int
}

// meter is a window against its limit; Width is the bar's length in the
// SVG's 100 units.
type meter struct {
	Count, Limit int64
	Width        int64
}

// bar is one second of the chart (SVG units, the chart 120 by 24).
type bar struct{ X, Y, H int }

func meterOf(count, limit int64) meter {
	m := meter{Count: count, Limit: limit}
	if limit > 0 {
		m.Width = min(count*100/limit, 100)
	}
	return m
}

// usageOf reads the pictures of cs; an error leaves them out (the page
// shows the rest), logged.
func (c *Console) usageOf(r *http.Request, cs []client) map[string]usageView {
	if c.deps.Usage == nil || len(cs) == 0 {
		return nil
	}
	ids := make([]string, len(cs))
	for i, cl := range cs {
		ids[i] = cl.ID
	}
	us, err := c.deps.Usage.Usage(r.Context(), ids, c.cfg.Now())
	if err != nil {
		c.log.WarnContext(r.Context(), "console: usage", "err", err)
		return nil
	}
	out := make(map[string]usageView, len(cs))
	for i, cl := range cs {
		u := us[i]
		v := usageView{API: meterOf(u.API.Count, cl.RateLimitPerMinute), Token: meterOf(u.Token.Count, cl.TokenRateLimitPerMinute), ChartWidth: 120, ChartTop: 24}
		per := make([]int64, len(u.API.PerBucket))
		for j := range per {
			per[j] = u.API.PerBucket[j]
			if j < len(u.Token.PerBucket) {
				per[j] += u.Token.PerBucket[j]
			}
			v.Peak = max(v.Peak, per[j])
			v.Total += per[j]
		}
		for j, n := range per {
			if n == 0 || v.Peak == 0 {
				continue
			}
			h := int(max(n*24/v.Peak, 1))
			v.Bars = append(v.Bars, bar{X: j * 2, Y: 24 - h, H: h})
		}
		v.ChartLabel = strconv.FormatInt(v.Total, 10) + " requests in the last minute, at most " + strconv.FormatInt(v.Peak, 10) + " in a second"
		out[cl.ID] = v
	}
	return out
}
