{{- /* (Named .tpl: a Go template, not YAML.) The DaemonSet's ServiceAccount, as the real chart's. */ -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "standin.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "standin.labels" . | nindent 4 }}
