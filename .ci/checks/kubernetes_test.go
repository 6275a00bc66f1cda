package checks

// The deployment files of deploy/, checked offline: the Kubernetes
// manifests are decoded strictly into Kubernetes' own API types
// (k8s.io/api), so that a misspelt or misplaced field fails as it would
// on a cluster, and then checked for what running mcpmux replicas needs;
// the HAProxy configurations are compared with each other and checked by
// haproxy itself where it is installed.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcpmux/mcpmux/config"
)

var k8sDir = filepath.Join("deploy", "kubernetes")

// kustomization is the part of kustomization.yaml these files use.
type kustomization struct {
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Namespace          string      `json:"namespace"`
	Resources          []string    `json:"resources"`
	ConfigMapGenerator []generator `json:"configMapGenerator"`
	SecretGenerator    []generator `json:"secretGenerator"`
	Images             []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

type generator struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
	Envs  []string `json:"envs"`
}

// manifests holds every object of the kustomization's resources.
type manifests struct {
	k           kustomization
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	pdbs        []*policyv1.PodDisruptionBudget
	namespaces  []string
}

func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}}
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &m.k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if m.k.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %s %s", m.k.APIVersion, m.k.Kind)
	}
	for _, file := range m.k.Resources {
		data, err := os.ReadFile(filepath.Join(k8sDir, file))
		if err != nil {
			t.Fatalf("a resource of kustomization.yaml: %v", err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			if err := m.add(doc); err != nil {
				t.Fatalf("%s, document %d: %v", file, i+1, err)
			}
		}
	}
	return m
}

// add decodes one object strictly into its API type.
func (m *manifests) add(doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	strict := func(out any) error { return yaml.UnmarshalStrict(doc, out) }
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		var d appsv1.Deployment
		if err := strict(&d); err != nil {
			return err
		}
		m.deployments[d.Name] = &d
	case "v1 Service":
		var s corev1.Service
		if err := strict(&s); err != nil {
			return err
		}
		m.services[s.Name] = &s
	case "v1 ConfigMap":
		var c corev1.ConfigMap
		if err := strict(&c); err != nil {
			return err
		}
		m.configMaps[c.Name] = &c
	case "policy/v1 PodDisruptionBudget":
		var p policyv1.PodDisruptionBudget
		if err := strict(&p); err != nil {
			return err
		}
		m.pdbs = append(m.pdbs, &p)
	case "v1 Namespace":
		var n corev1.Namespace
		if err := strict(&n); err != nil {
			return err
		}
		m.namespaces = append(m.namespaces, n.Name)
	default:
		return fmt.Errorf("unexpected kind %q (%s): teach this test its API type", head.Kind, head.APIVersion)
	}
	return nil
}

// selects reports whether selector picks pods labelled labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func container(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deployment %s: %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	return &d.Spec.Template.Spec.Containers[0]
}

// nonRoot checks a pod that runs as a non-root user with a read-only root
// filesystem and no privilege escalation.
func nonRoot(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod, c := d.Spec.Template.Spec.SecurityContext, container(t, d)
	if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || pod.RunAsUser == nil || *pod.RunAsUser == 0 {
		t.Errorf("deployment %s: the pod must run as a non-root user (runAsNonRoot, runAsUser)", d.Name)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("deployment %s: the root filesystem must be read-only", d.Name)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("deployment %s: allowPrivilegeEscalation must be false", d.Name)
	}
}

// flagValue returns the value of --name in args ("--name V" or "--name=V").
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func volume(d *appsv1.Deployment, name string) *corev1.Volume {
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &d.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

// mountedAt returns the volume mounted at path in c.
func mountedAt(d *appsv1.Deployment, c *corev1.Container, path string) *corev1.Volume {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return volume(d, m.Name)
		}
	}
	return nil
}

func TestKubernetesReplicas(t *testing.T) {
	m := load(t)
	if !slices.Contains(m.namespaces, m.k.Namespace) {
		t.Errorf("the namespace %q of kustomization.yaml is not created (namespaces: %v)", m.k.Namespace, m.namespaces)
	}
	d := m.deployments["mcpmux"]
	if d == nil {
		t.Fatal("no Deployment mcpmux")
	}
	c := container(t, d)
	pod := d.Spec.Template.Spec
	if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas: %v, want several", d.Spec.Replicas)
	}

	// The full image, under the name kustomization.yaml maps.
	var image string
	for _, img := range m.k.Images {
		if img.Name == c.Image {
			image = img.NewName + ":" + img.NewTag
		}
	}
	if !strings.HasSuffix(image, ":full") {
		t.Errorf("image %q maps to %q, want the full image (docker build --target full)", c.Image, image)
	}
	nonRoot(t, d)

	// Serves HTTP on the port the probes and Services use.
	addr, ok := flagValue(c.Args, "--http")
	if !ok || !strings.HasSuffix(addr, ":8080") || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http" {
		t.Errorf("args %v, ports %v: want --http on 8080, the container port named http", c.Args, c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: %+v, want GET /healthz on port http", name, p)
		}
	}
	if p := c.LivenessProbe; p != nil && time.Duration(p.PeriodSeconds*p.FailureThreshold)*time.Second <= 30*time.Second {
		t.Errorf("liveness: %d × %d s: a drain (503) must not look dead", p.FailureThreshold, p.PeriodSeconds)
	}

	// Shutdown: a preStop pause, then the drain, within the kubelet's
	// grace.
	graceArg, ok := flagValue(c.Args, "--shutdown-grace")
	grace, err := time.ParseDuration(graceArg)
	if !ok || err != nil {
		t.Fatalf("args %v: want --shutdown-grace", c.Args)
	}
	pre := c.Lifecycle
	if pre == nil || pre.PreStop == nil || pre.PreStop.Exec == nil || len(pre.PreStop.Exec.Command) != 2 || pre.PreStop.Exec.Command[0] != "sleep" {
		t.Fatalf("preStop: %+v, want exec sleep N", pre)
	}
	pause, err := time.ParseDuration(pre.PreStop.Exec.Command[1] + "s")
	if err != nil || pause <= 0 {
		t.Fatalf("preStop sleeps %q", pre.PreStop.Exec.Command[1])
	}
	// mcpmux takes up to grace to drain, then up to 5 s to deliver the
	// answers of cancelled calls (answerWait in app/shutdown.go).
	need := pause + grace + 5*time.Second
	if p := pod.TerminationGracePeriodSeconds; p == nil || time.Duration(*p)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds must be above preStop %v + --shutdown-grace %v + 5s", pause, grace)
	}

	// Memory for chromium, somewhere to write, the token from the Secret.
	if v := mountedAt(d, c, "/dev/shm"); v == nil || v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Errorf("/dev/shm: %+v, want an emptyDir in memory", v)
	}
	if v := mountedAt(d, c, "/tmp"); v == nil || v.EmptyDir == nil {
		t.Errorf("/tmp: %+v, want an emptyDir (the root is read-only)", v)
	}
	// npx writes to its cache: a writable copy of the image's, filled
	// before mcpmux starts.
	cache := mountedAt(d, c, "/home/mcpmux/.npm")
	filled := slices.ContainsFunc(pod.InitContainers, func(ic corev1.Container) bool {
		return ic.Image == c.Image && cache != nil && slices.ContainsFunc(ic.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == cache.Name }) &&
			strings.Contains(strings.Join(ic.Command, " "), "/home/mcpmux/.npm")
	})
	if cache == nil || cache.EmptyDir == nil || !filled {
		t.Errorf("npm's cache: %+v, want an emptyDir filled from the image's by an init container", cache)
	}
	var token *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == "MCPMUX_TOKEN" && e.ValueFrom != nil {
			token = e.ValueFrom.SecretKeyRef
		}
	}
	if token == nil || !slices.ContainsFunc(m.k.SecretGenerator, func(g generator) bool { return g.Name == token.Name }) {
		t.Errorf("MCPMUX_TOKEN: %+v, want it from the Secret of kustomization.yaml's secretGenerator", token)
	}
	for _, g := range m.k.SecretGenerator {
		for _, env := range g.Envs {
			ignore, _ := os.ReadFile(filepath.Join(k8sDir, ".gitignore"))
			if !slices.Contains(strings.Fields(string(ignore)), env) {
				t.Errorf("%s holds the token: kubernetes/.gitignore must list it", env)
			}
		}
	}

	// The config, from the ConfigMap, as mcpmux reads it.
	v := mountedAt(d, c, "/config")
	if v == nil || v.ConfigMap == nil {
		t.Fatalf("/config: %+v, want the config ConfigMap (MCPMUX_CONFIG of the image)", v)
	}
	cm := m.configMaps[v.ConfigMap.Name]
	if cm == nil {
		t.Fatalf("ConfigMap %q is not in the manifests", v.ConfigMap.Name)
	}
	dir := t.TempDir()
	for _, it := range v.ConfigMap.Items {
		content, ok := cm.Data[it.Key]
		if !ok {
			t.Errorf("item %q is not a key of ConfigMap %s", it.Key, cm.Name)
		}
		path := filepath.Join(dir, it.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for key := range cm.Data {
		if !slices.ContainsFunc(v.ConfigMap.Items, func(it corev1.KeyToPath) bool { return it.Key == key }) {
			t.Errorf("key %q of ConfigMap %s is not mounted", key, cm.Name)
		}
	}
	snap, err := config.Load(dir, &config.Options{Lookup: func(string) (string, bool) { return "", false }})
	if err != nil || len(snap.Errors) > 0 || len(snap.Servers) != 4 || snap.Settings.File == "" {
		t.Errorf("the ConfigMap's config directory: servers %d, errors %v, %v; want its 4 servers and mcpmux.yaml", len(snap.Servers), snap.Errors, err)
	}
	for _, s := range snap.Servers {
		for _, a := range s.Args {
			if strings.HasPrefix(a, "/") && !strings.HasPrefix(a, "/tmp") && !strings.HasPrefix(a, "/workspace") && !strings.HasPrefix(a, "/usr/bin/") {
				t.Errorf("server %s writes or reads %s, which the pod does not mount", s.Name, a)
			}
		}
	}

	// Services: HAProxy's discovery (headless) and the plain one.
	headless := m.services["mcpmux-replicas"]
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !selects(headless.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("Service mcpmux-replicas: %+v, want a headless Service of the replicas", headless)
	}
	if s := m.services["mcpmux"]; s == nil || !selects(s.Spec.Selector, d.Spec.Template.Labels) || s.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service mcpmux: %+v, want the replicas' port http", s)
	}

	// At most one replica down by choice.
	if len(m.pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets, want one", len(m.pdbs))
	}
	pdb := m.pdbs[0].Spec
	if !selects(pdb.Selector.MatchLabels, d.Spec.Template.Labels) || pdb.MaxUnavailable == nil || pdb.MaxUnavailable.IntValue() < 1 || pdb.MaxUnavailable.IntValue() >= int(*d.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget: %+v, want maxUnavailable 1 of the replicas", pdb)
	}
}

func TestKubernetesHAProxy(t *testing.T) {
	m := load(t)
	d := m.deployments["haproxy"]
	if d == nil {
		t.Fatal("no Deployment haproxy")
	}
	c := container(t, d)
	nonRoot(t, d)
	if !strings.HasPrefix(c.Image, "haproxy:2.") {
		t.Errorf("image %q, want HAProxy 2.x (the config is checked with 2.6)", c.Image)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas: %v, want 1: the stick table lives in one HAProxy's memory", d.Spec.Replicas)
	}
	v := mountedAt(d, c, "/usr/local/etc/haproxy")
	if v == nil || v.ConfigMap == nil {
		t.Fatalf("/usr/local/etc/haproxy: %+v, want the haproxy.cfg ConfigMap", v)
	}
	var gen *generator
	for i, g := range m.k.ConfigMapGenerator {
		if g.Name == v.ConfigMap.Name {
			gen = &m.k.ConfigMapGenerator[i]
		}
	}
	if gen == nil || !slices.Equal(gen.Files, []string{"haproxy.cfg"}) {
		t.Fatalf("ConfigMap %q: want it generated from haproxy.cfg by kustomization.yaml", v.ConfigMap.Name)
	}
	if s := m.services["haproxy"]; s == nil || !selects(s.Spec.Selector, d.Spec.Template.Labels) || s.Spec.Ports[0].Port != 8080 {
		t.Errorf("Service haproxy: %+v, want port 8080 of the HAProxy pods", s)
	}

	// The same haproxy.cfg as deploy/haproxy, but for its servers: a
	// template resolved by DNS from the headless Service.
	data, err := os.ReadFile(filepath.Join(k8sDir, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	k8s, template := directives(string(data))
	shippedCfg, err := os.ReadFile(filepath.Join("deploy", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	shipped, _ := directives(string(shippedCfg))
	if !slices.Equal(k8s, shipped) {
		t.Errorf("kubernetes/haproxy.cfg differs from haproxy/haproxy.cfg beyond its servers and resolvers:\n%s\nvs\n%s", strings.Join(k8s, "\n"), strings.Join(shipped, "\n"))
	}
	headless := m.services["mcpmux-replicas"]
	replicas := m.deployments["mcpmux"]
	want := fmt.Sprintf("%s.%s.svc.cluster.local:%d", headless.Name, m.k.Namespace, headless.Spec.Ports[0].Port)
	// One template per backend (sessions, and 2026-07-28's round robin).
	if backends := strings.Count(string(data), "\nbackend "); len(template) != backends {
		t.Fatalf("server-template: %q, want one in each of the %d backends", template, backends)
	}
	for _, tmpl := range template {
		if !strings.Contains(tmpl, " "+want+" ") || !strings.Contains(tmpl, "resolvers kubernetes") {
			t.Fatalf("server-template: %q, want the replicas' DNS name %s resolved by resolvers kubernetes", tmpl, want)
		}
		if slots, err := strconv.Atoi(strings.Fields(tmpl + " x x")[2]); err != nil || slots < int(*replicas.Spec.Replicas) {
			t.Errorf("server-template %q has fewer slots than replicas (%d)", tmpl, *replicas.Spec.Replicas)
		}
	}
	if bin, err := exec.LookPath("haproxy"); err == nil {
		for _, cfg := range []string{filepath.Join(k8sDir, "haproxy.cfg"), filepath.Join("deploy", "haproxy", "haproxy.cfg")} {
			if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
				t.Errorf("haproxy -c -f %s: %v\n%s", cfg, err, out)
			}
		}
	} else {
		t.Log("haproxy is not installed: the configurations were not checked by haproxy -c")
	}
}

// directives returns a haproxy.cfg's lines without comments, blank lines,
// server lines and the resolvers section, and its server-template lines.
func directives(cfg string) (rest, templates []string) {
	inResolvers := false
	for _, line := range strings.Split(cfg, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if line == trimmed { // a section starts
			inResolvers = strings.HasPrefix(trimmed, "resolvers ")
		}
		switch {
		case inResolvers, strings.HasPrefix(trimmed, "server "):
		case strings.HasPrefix(trimmed, "server-template "):
			templates = append(templates, trimmed)
		default:
			rest = append(rest, trimmed)
		}
	}
	return rest, templates
}
