// Command lambda is the apply Lambda's bootstrap binary (make build names it bootstrap):
// it starts aws-lambda-go's runtime loop on the handler of functions/apply.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/apply"
)

func main() { lambda.Start(apply.Lambda().Handle) }
