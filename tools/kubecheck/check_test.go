package kubecheck

import (
	"testing"
)

// Faults that decode fine but break the deployment.
func TestCheckFindsFaults(t *testing.T) {
	e := expect(t)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"service selects nothing", "edge.yaml",
			"  selector:\n    app.kubernetes.io/name: srtwhep\n    app.kubernetes.io/component: edge\n  ports:",
			"  selector:\n    app.kubernetes.io/name: srtwhep\n    app.kubernetes.io/component: edges\n  ports:",
			"Service/srtwhep-edge: selector map[app.kubernetes.io/component:edges app.kubernetes.io/name:srtwhep] matches the pods of no workload"},
		{"service targets a missing port", "origin.yaml", "      targetPort: srt\n      protocol: UDP\n    - name: http",
			"      targetPort: srtt\n      protocol: UDP\n    - name: http", "port srt targets srtt/UDP"},
		{"service renumbers a port", "origin.yaml", "    - name: metrics\n      port: 9998", "    - name: metrics\n      port: 9999",
			"port metrics is 9999 but reaches container port 9998"},
		{"container port the config does not open", "origin.yaml", "containerPort: 9998", "containerPort: 9999",
			"declares port 9999/tcp, which no listening key of its config opens"},
		{"config moves a port", "origin.yaml", `      listen: ":9998"`, `      listen: ":9996"`,
			"does not declare 9996/tcp, which metrics.listen opens"},
		{"config binds a port to loopback", "origin.yaml", "    logFormat: json\n    metrics:",
			"    logFormat: json\n    srt:\n      listen: \"127.0.0.1:8890\"\n    metrics:", "srt.listen binds it to 127.0.0.1"},
		{"unknown config key", "edge.yaml", "    logFormat: json", "    logFormatt: json", "srtwhep -check refuses it"},
		{"service links", "origin.yaml", "      enableServiceLinks: false\n", "", "SRTWHEP_EDGE_SERVICE_HOST: unknown variable"},
		{"GOMEMLIMIT from the request", "edge.yaml", "resource: limits.memory", "resource: requests.memory",
			"env GOMEMLIMIT must come from resourceFieldRef limits.memory"},
		{"no memory limit", "origin.yaml", "            limits:\n              cpu: \"1\"\n              memory: 1Gi\n",
			"            limits:\n              cpu: \"1\"\n", "has no memory limit"},
		{"half a core", "edge.yaml", "            requests:\n              cpu: \"1\"", "            requests:\n              cpu: 500m", "requests cpu 500m"},
		{"not on the node's network", "edge.yaml", "      hostNetwork: true", "      hostNetwork: false", "hostNetwork must be true"},
		{"node's DNS", "edge.yaml", "      dnsPolicy: ClusterFirstWithHostNet\n", "", "dnsPolicy is \"\""},
		{"any node", "edge.yaml", `        srtwhep.io/media: "true"`, `        srtwhep.io/media: "yes"`, "nodeSelector must be srtwhep.io/media"},
		{"probe path the server lacks", "origin.yaml", "              path: /readyz", "              path: /ready",
			`probes "/ready", which the server does not serve`},
		{"liveness on readyz", "edge.yaml", "              path: /healthz", "              path: /readyz", `livenessProbe probes "/readyz"; want /healthz`},
		{"probe on the metrics port", "edge.yaml", "              path: /healthz\n              port: http", "              path: /healthz\n              port: metrics",
			"livenessProbe port metrics is not the port http.listen opens"},
		{"source names no Service", "edge.yaml", "@srtwhep-origin:8890", "@srtwhep-orign:8890", "no Service is called srtwhep-orign"},
		{"source on the HTTP port", "edge.yaml", "@srtwhep-origin:8890", "@srtwhep-origin:8889", "Service srtwhep-origin has no UDP port 8889"},
		{"source on an edge", "edge.yaml", "@srtwhep-origin:8890", "@srtwhep-edge:8890", "Service srtwhep-edge has no UDP port 8890"},
		{"another image", "edge.yaml", "image: srtwhep:local", "image: srtwhep:latest", "no container runs srtwhep:local"},
		{"kustomization forgets a file", "kustomization.yaml", "  - edge.yaml\n", "", "resources lacks edge.yaml"},
		{"kustomization retags", "kustomization.yaml", "    newTag: local", "    newTag: v9", "images turns srtwhep into another image"},
		{"ServiceMonitor port", "monitoring/servicemonitor.yaml", "    - port: metrics", "    - port: metric",
			`scrapes port "metric", which Service srtwhep-origin lacks`},
		{"ServiceMonitor interval", "monitoring/servicemonitor.yaml", "      interval: 15s", "      interval: 15 s", `interval "15 s" is not a Prometheus duration`},
		{"one publicURL for all edges", "edge.yaml", `value: "http://$(HOST_IP):8889"`, `value: "http://live.example.org:8889"`,
			"each edge needs its own"},
		{"fixed public IP", "edge.yaml", `value: "$(HOST_IP)"`, `value: "198.51.100.1"`, "webrtc.publicIPs is [198.51.100.1]; want the node's address"},
		{"node label from the downward API", "edge.yaml", "fieldPath: status.hostIP", "fieldPath: spec.nodeLabels",
			`fieldRef "spec.nodeLabels" is not a field the downward API gives`},
		{"two origins", "origin.yaml", "  replicas: 1\n", "  replicas: 2\n", "replicas must be 1"},
		{"rolling origin", "origin.yaml", "    type: Recreate", "    type: RollingUpdate", "want Recreate"},
		{"config not mounted", "origin.yaml", "              mountPath: /etc/srtwhep\n", "              mountPath: /etc/srtwhep/conf\n",
			"no volume is mounted where -config /etc/srtwhep/srtwhep.yml points"},
		{"ConfigMap missing", "edge.yaml", "            name: srtwhep-edge-config", "            name: srtwhep-edge-conf",
			"ConfigMap srtwhep-edge-conf (mounted for -config /etc/srtwhep/srtwhep.yml) is not among the manifests"},
		{"other namespace", "edge.yaml", "  name: srtwhep\n  namespace: srtwhep\n", "  name: srtwhep\n  namespace: default\n",
			`Ingress/srtwhep: namespace is "default"`},
		{"ingress port", "edge.yaml", "                  name: http", "                  name: web", `backend srtwhep-edge has no port "web"`},
		{"PDB both ways", "edge.yaml", "  minAvailable: 1\n", "  minAvailable: 1\n  maxUnavailable: 1\n",
			"set exactly one of minAvailable and maxUnavailable"},
		{"PDB maxUnavailable on a DaemonSet", "edge.yaml", "  minAvailable: 1\n", "  maxUnavailable: 1\n",
			"only an integer minAvailable works"},
		{"PDB percentage on a DaemonSet", "edge.yaml", "  minAvailable: 1\n", "  minAvailable: 50%\n",
			"only an integer minAvailable works"},
		// The old defaults, each refused (the hostile-internet issue).
		{"old default: no publish credentials", "origin.yaml", publishEnv, "", "pathDefaults.publishUser is empty: anyone who reaches the publish Service may publish"},
		{"publish password in the manifest", "origin.yaml", "            - name: SRTWHEP_PATHDEFAULTS_PUBLISHPASS\n              valueFrom:\n                secretKeyRef:\n                  name: srtwhep-credentials\n                  key: publish-pass\n",
			"            - name: SRTWHEP_PATHDEFAULTS_PUBLISHPASS\n              value: 0123456789abcdef0123456789\n",
			"SRTWHEP_PATHDEFAULTS_PUBLISHPASS with valueFrom.secretKeyRef"},
		{"optional Secret", "origin.yaml", "                  key: publish-pass\n", "                  key: publish-pass\n                  optional: true\n",
			"env SRTWHEP_PATHDEFAULTS_PUBLISHPASS is an optional secretKeyRef"},
		{"old default: edge metrics on every node address", "edge.yaml", `      listen: "127.0.0.1:9998"`, `      listen: ":9998"`,
			`metrics.listen ":9998" is on the node's network`},
		{"old default: all of RFC 1918 trusted", "edge.yaml", "trustedProxies: [10.244.0.0/16]", "trustedProxies: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16]",
			"http.trustedProxies[0] 10.0.0.0/8 trusts a whole private range"},
		{"metrics on the publish Service", "origin.yaml", publishPorts, publishPorts + "    - name: metrics\n      port: 9998\n      targetPort: metrics\n      protocol: TCP\n",
			"port metrics exposes the metrics of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, problems := Load(copyManifests(t, tc.file, tc.old, tc.new))
			if len(problems) > 0 {
				t.Fatalf("the case must decode, to reach the checks: %v", problems)
			}
			wantProblem(t, Check(m, e), tc.want)
		})
	}
}

// publishEnv is the origin's publish credentials from the Secret.
const publishEnv = "            - name: SRTWHEP_PATHDEFAULTS_PUBLISHUSER\n              valueFrom:\n                secretKeyRef:\n                  name: srtwhep-credentials\n                  key: publish-user\n" +
	"            - name: SRTWHEP_PATHDEFAULTS_PUBLISHPASS\n              valueFrom:\n                secretKeyRef:\n                  name: srtwhep-credentials\n                  key: publish-pass\n"

// publishPorts opens the port list of the origin's internet-facing Service.
const publishPorts = "  externalTrafficPolicy: Local\n  selector:\n    app.kubernetes.io/name: srtwhep\n    app.kubernetes.io/component: origin\n  ports:\n"
