{{- /* Stand-in for the node-feature-discovery subchart (condition nfd.enabled in the real Chart.yaml):
the ServiceAccount its master creates (values: node-feature-discovery.master.serviceAccount), so a
test can tell whether this release deployed NFD. */ -}}
{{- if .Values.nfd.enabled }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: node-feature-discovery
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "standin.labels" . | nindent 4 }}
    app.kubernetes.io/component: node-feature-discovery
  annotations:
    gpufabric.io/nfd-image: {{ (index .Values "node-feature-discovery").image.repository | quote }}
{{- end }}
