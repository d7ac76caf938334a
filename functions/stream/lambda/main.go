// Command lambda is the stream Lambda's bootstrap binary (make build names it bootstrap):
// it starts aws-lambda-go's runtime loop on the handler of functions/stream.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/stream"
)

func main() { lambda.Start(stream.Lambda().Handle) }
