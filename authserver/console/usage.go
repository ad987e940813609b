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
//
// UsageHistory reads the hour the token service samples, a minute at a
// time, from the same windows (clients.RecordUsage), also off those paths.
type UsageReader interface {
	Usage(ctx context.Context, ids []string, now time.Time) ([]clients.Usage, error)
	UsageHistory(ctx context.Context, ids []string, now time.Time) ([]clients.UsageHistory, error)
}

// usageView is one client's picture: its API and token windows against
// their limits, the last minute per second (Minute) and the last hour per
// minute (Hour), each as bars.
type usageView struct {
	API, Token meter
	Minute     chart
	Hour       chart
}

// chart is a bar chart 120 by 24 SVG units of 60 periods (2 units each),
// its bars scaled to the busiest period; Label says it in words (the SVG's
// accessible name) and Total is the line under it.
type chart struct {
	Bars  []bar
	Peak  int64
	Total int64
	Label string
	Sum   string
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
	now := c.cfg.Now()
	us, err := c.deps.Usage.Usage(r.Context(), ids, now)
	if err != nil {
		c.log.WarnContext(r.Context(), "console: usage", "err", err)
		return nil
	}
	hs, err := c.deps.Usage.UsageHistory(r.Context(), ids, now)
	if err != nil {
		c.log.WarnContext(r.Context(), "console: usage history", "err", err)
		return nil
	}
	out := make(map[string]usageView, len(cs))
	for i, cl := range cs {
		u, h := us[i], hs[i]
		per := make([]int64, len(u.API.PerBucket))
		for j := range per {
			per[j] = u.API.PerBucket[j]
			if j < len(u.Token.PerBucket) {
				per[j] += u.Token.PerBucket[j]
			}
		}
		perMinute := make([]int64, len(h.Minutes))
		for j, m := range h.Minutes {
			perMinute[j] = m.API + m.Token
		}
		out[cl.ID] = usageView{
			API:    meterOf(u.API.Count, cl.RateLimitPerMinute),
			Token:  meterOf(u.Token.Count, cl.TokenRateLimitPerMinute),
			Minute: chartOf(per, "in the last minute", "in a second"),
			Hour:   chartOf(perMinute, "in the last hour", "in a minute"),
		}
	}
	return out
}

// chartOf draws counts (oldest first, at most 60) as bars scaled to the
// largest; span and period name the chart's time in its label.
func chartOf(counts []int64, span, period string) chart {
	var ch chart
	for _, n := range counts {
		ch.Peak = max(ch.Peak, n)
		ch.Total += n
	}
	for j, n := range counts {
		if n == 0 || ch.Peak == 0 {
			continue
		}
		h := int(max(n*24/ch.Peak, 1))
		ch.Bars = append(ch.Bars, bar{X: j * 2, Y: 24 - h, H: h})
	}
	total := strconv.FormatInt(ch.Total, 10)
	ch.Label = total + " requests " + span + ", at most " + strconv.FormatInt(ch.Peak, 10) + " " + period
	ch.Sum = total + " " + span
	return ch
}
