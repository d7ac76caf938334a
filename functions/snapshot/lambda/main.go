// Command lambda is the snapshot Lambda's bootstrap binary (make build names it bootstrap):
// it starts aws-lambda-go's runtime loop on the handler of functions/snapshot.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/snapshot"
)

func main() { lambda.Start(snapshot.Lambda().Handle) }
