{{/*
The manifests of this chart. They live here, in a .tpl partial, because Helm templates are not
YAML and ansible-test's yamllint parses every .yaml file: each templates/*.yaml file is a single
YAML comment that Helm renders into "#" + newline + the manifest below.
*/}}
{{- define "gpufabric-crd-demo.railprofile" }}
apiVersion: lab.gpufabric.io/v1alpha1
kind: RailProfile
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
spec:
  mode: {{ .Values.mode | quote }}
  size: {{ .Values.size }}
{{- end }}
