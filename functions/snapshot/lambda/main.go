// Command lambda is the snapshot Lambda's bootstrap binary (make build names it
// bootstrap): it sets the garbage collector from the function's memory (internal/lambdagc)
// and starts aws-lambda-go's runtime loop on the handler of functions/snapshot.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/snapshot"
	"github.com/mssqlcdc/mssqlcdc/internal/lambdagc"
)

func main() {
	lambdagc.Configure(os.Getenv)
	lambda.Start(snapshot.Lambda().Handle)
}
