// Command lambda is the reconcile Lambda's bootstrap binary (make build names it
// bootstrap): it starts aws-lambda-go's runtime loop on the handler of functions/reconcile.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/reconcile"
)

func main() { lambda.Start(reconcile.Lambda().Handle) }
