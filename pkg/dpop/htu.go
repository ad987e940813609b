package dpop

import (
	"net/url"
	"strings"
)

// NormalizeURI returns the form of an HTTP URI that a proof's "htu" and the
// request's target URI are compared in (RFC 9449 section 4.3, check 9):
// without its query and fragment, after syntax-based normalization (RFC 3986
// section 6.2.2: scheme and host in lower case, percent-encodings in upper
// case and decoded where they encode an unreserved character, dot segments
// removed) and scheme-based normalization (section 6.2.3: the scheme's
// default port dropped, an empty path made "/"). It reports false for
// anything but an absolute http or https URI with a host and no userinfo.
func NormalizeURI(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	var defaultPort string
	switch scheme {
	case "https":
		defaultPort = "443"
	case "http":
		defaultPort = "80"
	default:
		return "", false
	}
	host := strings.ToLower(u.Host)
	if h, port, ok := cutPort(host); ok && (port == defaultPort || port == "") {
		host = h
	}
	p, ok := normalizePercent(u.EscapedPath())
	if !ok {
		return "", false
	}
	p = removeDotSegments(p)
	if p == "" {
		p = "/"
	}
	return scheme + "://" + host + p, true
}

// cutPort splits "host:port" ("[v6]:port" included) at the port's colon.
func cutPort(hostport string) (host, port string, ok bool) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 || strings.IndexByte(hostport[i:], ']') >= 0 {
		return hostport, "", false
	}
	return hostport[:i], hostport[i+1:], true
}

// normalizePercent upper-cases the hex digits of percent-encodings and
// decodes those of unreserved characters (RFC 3986 sections 2.3, 6.2.2.1
// and 6.2.2.2).
func normalizePercent(p string) (string, bool) {
	if strings.IndexByte(p, '%') < 0 {
		return p, true
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return "", false
		}
		v := unhex(p[i+1])<<4 | unhex(p[i+2])
		if unreserved(v) {
			b.WriteByte(v)
		} else {
			b.WriteByte('%')
			b.WriteByte(upper(p[i+1]))
			b.WriteByte(upper(p[i+2]))
		}
		i += 2
	}
	return b.String(), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments is RFC 3986 section 5.2.4 for an absolute path.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	r := strings.Join(out, "/")
	if !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
}
