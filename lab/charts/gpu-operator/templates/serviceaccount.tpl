apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpu-operator
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "standin.labels" . | nindent 4 }}
