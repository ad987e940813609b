//go:build unix

package helm

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// loopback runs rendered containers as processes on this machine: each
// container port on a free loopback port, each Service name resolving to
// the loopback port of the container port its target names, each mounted
// volume a directory of the test (a Secret's items written into it).
type loopback struct {
	t       *testing.T
	r       *rendered
	bin     string
	home    string
	secrets map[string]map[string][]byte
	// secrets are the rendered Secrets and those the test makes, by name.
	// ports maps a Deployment's container ports to loopback ports.
	ports map[string]map[int32]int
	// entrypoints are deploy/Dockerfile's, by target.
	entrypoints map[string][]string
}

func newLoopback(t *testing.T, r *rendered) *loopback {
	t.Helper()
	l := &loopback{t: t, r: r, bin: e2etest.BuildServers(t), home: t.TempDir(),
		secrets: map[string]map[string][]byte{}, ports: map[string]map[int32]int{},
		entrypoints: dockerfileEntrypoints(t)}
	for _, s := range r.Secrets {
		l.secrets[s.Name] = s.Data
	}
	for _, d := range r.Deployments {
		l.ports[d.Name] = map[int32]int{}
		for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
			l.ports[d.Name][p.ContainerPort] = redistest.FreePort(t)
		}
	}
	return l
}

// dockerfileEntrypoints reads each target's ENTRYPOINT of deploy/Dockerfile:
// what a container runs when the chart gives args only.
func dockerfileEntrypoints(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(e2etest.RepoRoot(t), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	stage := ""
	from := regexp.MustCompile(`(?i)^FROM\s+\S+\s+AS\s+(\S+)`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := from.FindStringSubmatch(line); m != nil {
			stage = m[1]
		} else if rest, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			var ep []string
			if err := json.Unmarshal([]byte(rest), &ep); err != nil {
				t.Fatalf("deploy/Dockerfile: ENTRYPOINT of %s is not an exec form: %s", stage, rest)
			}
			out[stage] = ep
		}
	}
	return out
}

// addr is the loopback address of a Deployment's container port (a name
// or a number).
func (l *loopback) addr(d *appsv1.Deployment, port intstr.IntOrString) string {
	l.t.Helper()
	cp, ok := containerPort(d.Spec.Template.Spec.Containers[0], port)
	if !ok {
		l.t.Fatalf("%s declares no port %s", d.Name, port.String())
	}
	return "127.0.0.1:" + strconv.Itoa(l.ports[d.Name][cp.ContainerPort])
}

// serviceAddr is where a pod reaching Service host on port lands.
func (l *loopback) serviceAddr(host string, port int32) (string, bool) {
	s := serviceHost(l.r, host)
	if s == nil {
		return "", false
	}
	d := podsOf(l.r, s.Spec.Selector)
	for _, p := range s.Spec.Ports {
		if p.Port == port && d != nil {
			return l.addr(d, p.TargetPort), true
		}
	}
	l.t.Fatalf("Service %s has no port %d", s.Name, port)
	return "", false
}

var listenAddr = regexp.MustCompile(`^(0\.0\.0\.0)?:([0-9]+)$`)

// rewrite maps a value of a container's environment or arguments to this
// machine: a listen address on a container port to its loopback port
// (any other port fails: nothing could reach it), a URL naming a Service
// to the loopback port behind it, a path under a mount to the mount's
// directory.
func (l *loopback) rewrite(name string, mounts map[string]string, v string) string {
	l.t.Helper()
	if strings.Contains(v, "$(") {
		l.t.Fatalf("%s: %q: Kubernetes would expand $(...) references, which this test does not", name, v)
	}
	if m := listenAddr.FindStringSubmatch(v); m != nil {
		p, _ := strconv.Atoi(m[2])
		local, ok := l.ports[name][int32(p)]
		if !ok {
			l.t.Fatalf("%s listens on %s, a port its container does not declare", name, v)
		}
		return "127.0.0.1:" + strconv.Itoa(local)
	}
	if u, err := url.Parse(v); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		n, _ := strconv.Atoi(port)
		if a, ok := l.serviceAddr(u.Hostname(), int32(n)); ok {
			u.Host = a
			return u.String()
		}
	}
	for path, dir := range mounts {
		if v == path || strings.HasPrefix(v, path+"/") {
			return dir + strings.TrimPrefix(v, path)
		}
	}
	return v
}

// command is the container's command line and environment, mapped to this
// machine.
func (l *loopback) command(name string, spec corev1.PodSpec) ([]string, []string) {
	l.t.Helper()
	ctr := spec.Containers[0]
	mounts := map[string]string{}
	for _, vm := range ctr.VolumeMounts {
		dir := filepath.Join(l.t.TempDir(), vm.Name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			l.t.Fatal(err)
		}
		for _, vol := range spec.Volumes {
			if vol.Name == vm.Name && vol.Secret != nil {
				data, ok := l.secrets[vol.Secret.SecretName]
				if !ok {
					l.t.Fatalf("%s mounts Secret %s, which neither the chart nor the test made", ctr.Name, vol.Secret.SecretName)
				}
				for _, item := range vol.Secret.Items {
					if err := os.WriteFile(filepath.Join(dir, item.Path), data[item.Key], 0o400); err != nil {
						l.t.Fatal(err)
					}
				}
			}
		}
		mounts[vm.MountPath] = dir
	}
	env := e2etest.BaseEnv(l.home)
	for _, e := range ctr.Env {
		v := e.Value
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil {
				l.t.Fatalf("%s: %s is not from a Secret", ctr.Name, e.Name)
			}
			data, ok := l.secrets[ref.Name][ref.Key]
			if !ok {
				l.t.Fatalf("%s: %s from Secret %s key %s, which is not there", ctr.Name, e.Name, ref.Name, ref.Key)
			}
			v = string(data)
		}
		env = append(env, e.Name+"="+l.rewrite(name, mounts, v))
	}
	argv := ctr.Command
	if len(argv) == 0 {
		repo := ctr.Image[:strings.LastIndex(ctr.Image, ":")]
		argv = l.entrypoints[repo[strings.LastIndex(repo, "/")+1:]]
		if len(argv) == 0 {
			l.t.Fatalf("%s: no command, and deploy/Dockerfile has no ENTRYPOINT for image %s", ctr.Name, ctr.Image)
		}
	}
	args := slices.Clone(ctr.Args)
	for i, a := range args {
		if i > 0 && args[i-1] == "--port" {
			p, err := strconv.Atoi(a)
			local, ok := l.ports[name][int32(p)]
			if err != nil || !ok {
				l.t.Fatalf("%s: --port %s, a port its container does not declare", name, a)
			}
			args[i] = strconv.Itoa(local)
			continue
		}
		args[i] = l.rewrite(name, mounts, a)
	}
	if filepath.Base(argv[0]) == "redis-server" {
		// Listening on loopback only, which the pod's network is here.
		args = append(args, "--bind", "127.0.0.1")
	}
	exe := argv[0]
	if base := filepath.Base(exe); base == "authserver" || base == "resourceserver" {
		exe = filepath.Join(l.bin, base) // the images' /authserver, /resourceserver
	} else if p, err := exec.LookPath(base); err == nil {
		exe = p
	}
	return append([]string{exe}, append(argv[1:], args...)...), env
}

// start runs the Deployment's container and waits for each of its probes
// to pass on the loopback port of the port it names.
func (l *loopback) start(name string) *e2etest.Process {
	l.t.Helper()
	d := l.r.deployment(name)
	argv, env := l.command(name, d.Spec.Template.Spec)
	p := e2etest.StartProcess(l.t, name, env, argv[0], argv[1:]...)
	ctr := d.Spec.Template.Spec.Containers[0]
	for _, probe := range []*corev1.Probe{ctr.StartupProbe, ctr.LivenessProbe, ctr.ReadinessProbe} {
		switch {
		case probe == nil:
		case probe.HTTPGet != nil:
			e2etest.WaitOK(l.t, "http://"+l.addr(d, probe.HTTPGet.Port)+probe.HTTPGet.Path, p)
		case probe.TCPSocket != nil:
			addr := l.addr(d, probe.TCPSocket.Port)
			testwait.Eventually(l.t, e2etest.StartTimeout, name+" accepts on "+addr, func() bool {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
		}
	}
	return p
}

// run runs the Deployment's container as a one-off command with other
// arguments (an operator command in its pod) and returns its output.
func (l *loopback) run(name string, args ...string) []byte {
	l.t.Helper()
	d := l.r.deployment(name)
	argv, env := l.command(name, d.Spec.Template.Spec)
	cmd := exec.Command(argv[0], args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		l.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errOutput(err))
	}
	return out
}

func errOutput(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// get answers a GET of url with its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
