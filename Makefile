# mssqlcdc: make test runs everything CI runs; make build builds the Lambda zips.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Each function is functions/<name> (the handler package) with its main in functions/<name>/lambda.
FUNCTIONS := $(patsubst functions/%/lambda/main.go,%,$(wildcard functions/*/lambda/main.go))
# The Lambda architecture (arm64: Graviton; amd64 for LocalStack on an amd64 host) and where
# the zips go.
LAMBDA_GOARCH ?= arm64
DIST ?= dist

.PHONY: test lint build demo clean

test:
	./scripts/test.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...

# Each function as a Lambda zip for the provided.al2023 runtime on arm64: the binary must
# be named bootstrap. The zips are byte-identical across builds of the same code, so
# Terraform's source_code_hash changes only with the code: -trimpath drops the checkout's
# path, -buildvcs=false the commit (a commit that changes no code must not change the
# zip), and lambdazip writes no timestamps (internal/lambdazip's test keeps it so).
build:
	@mkdir -p $(DIST)
	@for f in $(FUNCTIONS); do \
	  echo "== $$f"; \
	  rm -rf $(DIST)/$$f && mkdir -p $(DIST)/$$f && \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) go build -tags lambda.norpc -trimpath -buildvcs=false -ldflags="-s -w" -o $(DIST)/$$f/bootstrap ./functions/$$f/lambda && \
	  go run ./internal/lambdazip $(DIST)/$$f.zip $(DIST)/$$f/bootstrap || exit 1; \
	done

demo:
	go run ./cmd/mssqlcdc demo

clean:
	rm -rf dist demo-lake
