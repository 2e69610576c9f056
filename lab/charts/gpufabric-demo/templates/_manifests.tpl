{{/*
The manifests of this chart. They live here, in a .tpl partial, because Helm templates are not
YAML and ansible-test's yamllint parses every .yaml file: each templates/*.yaml file is a single
YAML comment that Helm renders into "#" + newline + the manifest below.
*/}}
{{- define "gpufabric-demo.configmap" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    {{- include "gpufabric-demo.labels" . | nindent 4 }}
data:
  {{- range $key, $value := .Values.data }}
  {{ $key }}: {{ $value | quote }}
  {{- end }}
{{- end }}
{{- define "gpufabric-demo.deployment" }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "gpufabric-demo.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      {{- include "gpufabric-demo.selector" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "gpufabric-demo.selector" . | nindent 8 }}
      annotations:
        checksum/config: {{ .Values.data | toJson | sha256sum }}
    spec:
      containers:
        - name: demo
          image: {{ .Values.image }}
          ports:
            - containerPort: {{ .Values.service.port }}
              name: http
          envFrom:
            - configMapRef:
                name: {{ .Release.Name }}-config
{{- end }}
{{- define "gpufabric-demo.service" }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "gpufabric-demo.labels" . | nindent 4 }}
spec:
  selector:
    {{- include "gpufabric-demo.selector" . | nindent 4 }}
  ports:
    - name: http
      port: {{ .Values.service.port }}
      targetPort: http
{{- end }}
