// Command lambda is the reconcile Lambda's bootstrap binary (make build names it
// bootstrap): it sets the garbage collector from the function's memory (internal/lambdagc)
// and starts aws-lambda-go's runtime loop on the handler of functions/reconcile.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/reconcile"
	"github.com/mssqlcdc/mssqlcdc/internal/lambdagc"
)

func main() {
	lambdagc.Configure(os.Getenv)
	lambda.Start(reconcile.Lambda().Handle)
}
