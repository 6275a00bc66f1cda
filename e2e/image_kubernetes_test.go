package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpmux/mcpmux/config"
)

// The full image as deploy/kubernetes runs it: the Deployment's pod, with
// its init container, arguments, environment and volumes (ConfigMap and
// emptyDirs as directories of this machine), on a read-only root
// filesystem. buildah run has no --read-only, but its processes run
// without capabilities: for the pod's non-root user a root filesystem is
// read-only once every directory and file of it that user may write is
// mounted read-only over itself, which is what this does.
func TestImageContainerKubernetes(t *testing.T) {
	image := imageUnderTest(t, "MCPMUX_IMAGE_FULL")
	page := imageTestPage(t)
	pod, configMaps := kubernetesPod(t)
	if len(pod.Containers) != 1 {
		t.Fatalf("the pod has %d containers, want mcpmux alone", len(pod.Containers))
	}
	mux := pod.Containers[0]
	user := podUser(t, pod)
	dirs := podVolumes(t, pod, configMaps)
	token := rand.Text()

	// The init containers, in order, on the same volumes: they fill npm's
	// cache from the image's.
	for _, ic := range pod.InitContainers {
		if ic.Image != mux.Image {
			t.Fatalf("init container %s runs %s, not the image of mcpmux (%s)", ic.Name, ic.Image, mux.Image)
		}
		c := newContainer(t, image)
		c.user = user
		argv := append(slices.Clone(ic.Command), ic.Args...)
		if out, code := c.runWith(t, podEnv(t, &ic, token), byMountPoint(append(mounts(t, &ic, dirs), c.readOnlyRoot(t, &ic)...)), argv...); code != 0 {
			t.Fatalf("init container %s: %q exited with %d:\n%s", ic.Name, argv, code, out)
		}
	}

	c := newContainer(t, image)
	c.user = user
	if len(mux.Command) > 0 {
		t.Fatalf("the mcpmux container sets command %q: the image's entrypoint (tini) would not run", mux.Command)
	}
	volumes := byMountPoint(append(mounts(t, &mux, dirs), c.readOnlyRoot(t, &mux)...))
	env := podEnv(t, &mux, token)

	// The pod's user can write to its writable volumes, and nowhere else:
	// not to the root, nor to what readOnlyRoot mounted read-only.
	var writable []string
	for _, m := range mux.VolumeMounts {
		if !m.ReadOnly {
			writable = append(writable, m.MountPath)
		}
	}
	var probe strings.Builder
	probe.WriteString(`for d in / "$HOME" `)

	for _, v := range volumes {
		dir := strings.Split(v, ":")[1]
		if info, err := os.Stat(filepath.Join(c.root, dir)); err == nil && !info.IsDir() {
			dir = filepath.Dir(dir)
		}
		probe.WriteString(dir + " ")
	}
	probe.WriteString(`; do touch "$d/.probe" 2>/dev/null && rm "$d/.probe" && echo "$d"; done; true`)
	out, _ := c.runWith(t, env, volumes, "sh", "-c", probe.String())
	got := slices.Compact(slices.Sorted(slices.Values(strings.Fields(out))))
	slices.Sort(writable)
	if !slices.Equal(got, writable) {
		t.Errorf("writable in the pod: %q, want its writable volumes alone: %q", got, writable)
	}

	s := c.start(t, podArgs(mux.Args, env), env, volumes)
	shipped, err := config.Load(dirs[mountedVolume(t, &mux, "/config")], nil)
	if err != nil {
		t.Fatal(err)
	}
	if up, configured := s.waitServersStarted(t); up != len(shipped.Servers) || configured != len(shipped.Servers) {
		t.Errorf("%d of %d servers up, want all %d of the ConfigMap's", up, configured, len(shipped.Servers))
	}
	c.checkRunsAs(t, c.uid(t))
	// The probes' request, and the image's HEALTHCHECK.
	if p := mux.ReadinessProbe; p == nil || p.HTTPGet == nil {
		t.Error("the mcpmux container has no HTTP readiness probe")
	} else if resp, err := http.Get(s.url + p.HTTPGet.Path); err != nil {
		t.Errorf("readiness probe: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("readiness probe GET %s: %s", p.HTTPGet.Path, resp.Status)
		}
	}
	checkHealthy(t, s, fmt.Sprintf("healthy: ok, %d of %d servers up", len(shipped.Servers), len(shipped.Servers)))

	cs := connectImage(t, s, token)
	names := toolNames(t, cs)
	for _, srv := range shipped.Servers {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, srv.NamePrefix()+"__") }) {
			t.Errorf("no tool of server %s among %v", srv.Name, names)
		}
	}
	checkBenchmarkRefused(t, cs)
	// The filesystem server writes to its emptyDir.
	workspace := mountedVolume(t, &mux, "/workspace")
	if res := callTool(t, cs, "filesystem__write_file", map[string]any{"path": "/workspace/note.txt", "content": "from the pod"}); res.IsError {
		t.Errorf("filesystem__write_file in /workspace: %q", resultText(res))
	} else if data, err := os.ReadFile(filepath.Join(dirs[workspace], "note.txt")); err != nil || string(data) != "from the pod" {
		t.Errorf("the workspace volume holds %q (%v), want the file written", data, err)
	}
	// chromium starts on the read-only root, with the pod's XDG dirs.
	res := callTool(t, cs, "playwright__browser_navigate", map[string]any{"url": page})
	if res.IsError || !strings.Contains(resultText(res), "Image test page") {
		t.Fatalf("playwright__browser_navigate to %s = %q (isError %v), want the page's title", page, resultText(res), res.IsError)
	}
	procs := c.checkRunsAs(t, c.uid(t))
	if !slices.ContainsFunc(procs, func(p containerProc) bool { return strings.Contains(p.cmdline, "chromium") }) {
		t.Errorf("no chromium process in the container after navigating: %v", procs)
	}
	s.stop(t)
}

// kubernetesPod returns the pod template of deploy/kubernetes's Deployment
// mcpmux and the ConfigMaps of the kustomization, by name.
func kubernetesPod(t *testing.T) (*podSpec, map[string]*k8sConfigMap) {
	t.Helper()
	dir := filepath.Join("..", "deploy", "kubernetes")
	var k struct{ Resources []string }
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = yaml.Unmarshal(data, &k)
	}
	if err != nil {
		t.Fatal(err)
	}
	var pod *podSpec
	configMaps := map[string]*k8sConfigMap{}
	for _, file := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var head struct {
				Kind     string
				Metadata struct{ Name string }
			}

			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch {
			case head.Kind == "Deployment" && head.Metadata.Name == "mcpmux":
				var d k8sDeployment
				if err := yaml.Unmarshal(doc, &d); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				pod = &d.Spec.Template.Spec
			case head.Kind == "ConfigMap":
				var cm k8sConfigMap
				if err := yaml.Unmarshal(doc, &cm); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				configMaps[cm.Metadata.Name] = &cm
			}
		}
	}
	if pod == nil {
		t.Fatal("deploy/kubernetes has no Deployment mcpmux")
	}
	return pod, configMaps
}

// podUser is the pod's runAsUser:runAsGroup, as buildah run --user takes
// it.
func podUser(t *testing.T, pod *podSpec) string {
	t.Helper()
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil {
		t.Fatal("the pod sets no runAsUser and runAsGroup")
	}
	return fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup)
}

// podVolumes makes a directory of this machine for each volume of the
// pod, by name. An emptyDir is empty and as the kubelet makes it: root's,
// writable by anyone, and with an fsGroup that group's, set-group-ID. A
// ConfigMap holds its items, read-only.
func podVolumes(t *testing.T, pod *podSpec, configMaps map[string]*k8sConfigMap) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	for _, v := range pod.Volumes {
		dir := t.TempDir()
		switch {
		case v.EmptyDir != nil:
			mode := fs.FileMode(0o777)
			if sc := pod.SecurityContext; sc != nil && sc.FSGroup != nil {
				if err := os.Chown(dir, 0, int(*sc.FSGroup)); err != nil {
					t.Fatal(err)
				}
				mode |= fs.ModeSetgid
			}
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}

		case v.ConfigMap != nil:
			cm := configMaps[v.ConfigMap.Name]
			if cm == nil {
				t.Fatalf("volume %s: no ConfigMap %s", v.Name, v.ConfigMap.Name)
			}
			for _, it := range v.ConfigMap.Items {
				content, ok := cm.Data[it.Key]
				if !ok {
					t.Fatalf("volume %s: ConfigMap %s has no key %s", v.Name, cm.Metadata.Name, it.Key)
				}
				p := filepath.Join(dir, it.Path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("volume %s: only emptyDir and configMap volumes are emulated here", v.Name)
		}
		dirs[v.Name] = dir
	}
	return dirs
}

// mountedVolume names the volume mounted at path in c.
func mountedVolume(t *testing.T, c *k8sContainer, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return m.Name
		}
	}
	t.Fatalf("container %s mounts nothing at %s", c.Name, path)
	return ""
}

// mounts are c's volume mounts as buildah run --volume takes them.
func mounts(t *testing.T, c *k8sContainer, dirs map[string]string) []string {
	t.Helper()
	var out []string
	for _, m := range c.VolumeMounts {
		dir, ok := dirs[m.Name]
		if !ok || m.SubPath != "" {
			t.Fatalf("container %s: volume mount %+v", c.Name, m)
		}
		v := dir + ":" + m.MountPath
		if m.ReadOnly {
			v += ":ro"
		}
		out = append(out, v)
	}
	return out
}

// podEnv is c's environment; MCPMUX_TOKEN, from the Secret, is token;
// MCPMUX_STATE_KEY, from its Secret, a key of the test; POD_IP, from the
// pod's status, loopback.
func podEnv(t *testing.T, c *k8sContainer, token string) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.Name == "MCPMUX_TOKEN" && e.ValueFrom.SecretKeyRef != nil:
			env = append(env, e.Name+"="+token)
		case e.Name == "MCPMUX_STATE_KEY" && e.ValueFrom.SecretKeyRef != nil:
			env = append(env, e.Name+"="+rand.Text()+rand.Text())
		case e.Name == "POD_IP" && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			env = append(env, e.Name+"=127.0.0.1")
		default:
			t.Fatalf("container %s: env %s from %+v is not emulated here", c.Name, e.Name, e.ValueFrom)
		}
	}
	return env
}

// podArgs are args with $(VAR) of env expanded, as the kubelet does.
func podArgs(args, env []string) []string {
	var pairs []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		pairs = append(pairs, "$("+k+")", v)
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// byMountPoint sorts volumes ("HOST:CONTAINER[:ro]") by their mount
// point, so that a directory is mounted before the volumes inside it.
func byMountPoint(volumes []string) []string {
	slices.SortFunc(volumes, func(a, b string) int { return strings.Compare(strings.Split(a, ":")[1], strings.Split(b, ":")[1]) })
	return volumes
}

// readOnlyRoot returns read-only bind mounts, over themselves, of every
// directory and file of the container's root filesystem that its user may
// write and that no volume of k covers: the rest of the root no process of
// a user without capabilities can write anyway.
func (c *container) readOnlyRoot(t *testing.T, k *k8sContainer) []string {
	t.Helper()
	if sc := k.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		return nil
	}
	uid, gid := c.uid(t), -1
	if _, g, ok := strings.Cut(c.user, ":"); ok {
		gid, _ = strconv.Atoi(g)
	}
	covered := func(p string) bool {
		return slices.ContainsFunc(k.VolumeMounts, func(m k8sVolumeMount) bool {
			return p == m.MountPath || strings.HasPrefix(p, m.MountPath+"/")
		})
	}
	var out []string
	err := filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := "/" + strings.TrimPrefix(p, c.root+"/")
		switch {
		case p == c.root:
			return nil
		case rel == "/dev" || rel == "/proc" || rel == "/sys" || covered(rel):
			// Mounted by buildah, as by the container runtime, or a volume.
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		mode := info.Mode().Perm()
		if mode&0o002 != 0 || int(st.Uid) == uid && mode&0o200 != 0 || int(st.Gid) == gid && mode&0o020 != 0 {
			out = append(out, p+":"+rel+":ro")
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The parts of Kubernetes objects this test reads. (k8s.io/api's own types
// stay out of the product's go.mod: the repository checks in .ci/ validate
// the manifests with them.)
type (
	k8sDeployment struct {
		Spec struct {
			Template struct {
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	k8sConfigMap struct {
		Metadata struct{ Name string } `yaml:"metadata"`
		Data     map[string]string     `yaml:"data"`
	}
	podSpec struct {
		SecurityContext *struct {
			RunAsUser  *int64 `yaml:"runAsUser"`
			RunAsGroup *int64 `yaml:"runAsGroup"`
			FSGroup    *int64 `yaml:"fsGroup"`
		} `yaml:"securityContext"`
		InitContainers []k8sContainer `yaml:"initContainers"`
		Containers     []k8sContainer `yaml:"containers"`
		Volumes        []struct {
			Name      string    `yaml:"name"`
			EmptyDir  *struct{} `yaml:"emptyDir"`
			ConfigMap *struct {
				Name  string `yaml:"name"`
				Items []struct {
					Key  string `yaml:"key"`
					Path string `yaml:"path"`
				} `yaml:"items"`
			} `yaml:"configMap"`
		} `yaml:"volumes"`
	}
	k8sContainer struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
				FieldRef *struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		VolumeMounts   []k8sVolumeMount `yaml:"volumeMounts"`
		ReadinessProbe *struct {
			HTTPGet *struct {
				Path string `yaml:"path"`
			} `yaml:"httpGet"`
		} `yaml:"readinessProbe"`
		SecurityContext *struct {
			ReadOnlyRootFilesystem *bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
	}
	k8sVolumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
		SubPath   string `yaml:"subPath"`
	}
)
