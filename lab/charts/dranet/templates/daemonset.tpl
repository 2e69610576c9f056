{{- /*
(Named .tpl: a Go template, not YAML.) The driver's DaemonSet, with the fields of the real chart's
templates/daemonset.yaml at v1.4.0 that the role's values reach: the image ("repository:tag", so a
tag that carries "@sha256:..." pins the digest), its pull secrets, the node selector, affinity and
tolerations; privileged on the host network as upstream. In the lab the controller manager makes
one Pod per selected node and kwok runs it; no container starts, and lab/cluster/play_operator.py
publishes the driver's ResourceSlices instead.
*/ -}}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ include "standin.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "standin.labels" . | nindent 4 }}
    app: dranet
spec:
  selector:
    matchLabels:
      app: dranet
  template:
    metadata:
      labels:
        {{- include "standin.labels" . | nindent 8 }}
        app: dranet
    spec:
      hostNetwork: true
      serviceAccountName: {{ include "standin.fullname" . }}
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets: {{ toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector: {{ toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity: {{ toYaml . | nindent 8 }}
      {{- end }}
      tolerations: {{ toYaml .Values.tolerations | nindent 8 }}
      containers:
        - name: dranet
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            - /dranet
            - --v={{ .Values.logVerbosity }}
            - --hostname-override=$(NODE_NAME)
            - --kubelet-root-dir={{ .Values.kubeletRootDir }}
          env:
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
          resources:
            requests: {{ toYaml .Values.resources.requests | nindent 14 }}
          securityContext:
            privileged: true
