module github.com/benchctl/benchctl

go 1.26

require (
	github.com/distribution/reference v0.6.0
	go.yaml.in/yaml/v3 v3.0.6
)

require github.com/opencontainers/go-digest v1.0.0 // indirect
