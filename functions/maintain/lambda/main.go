// Command lambda is the maintain Lambda's bootstrap binary (make build names it
// bootstrap): it sets the garbage collector from the function's memory (internal/lambdagc)
// and starts aws-lambda-go's runtime loop on the handler of functions/maintain.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/maintain"
	"github.com/mssqlcdc/mssqlcdc/internal/lambdagc"
)

func main() {
	lambdagc.Configure(os.Getenv)
	lambda.Start(maintain.Lambda().Handle)
}
