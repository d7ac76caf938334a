// Preloaded into the DynamoDB emulator (node -r scripts/dynalite-guard.cjs .../dynalite):
// dynalite throws from a request's 'error' handler when a client closes the connection
// mid-request (its index.js: req.on('error', ... throw err)), and that
// uncaught ECONNRESET "aborted" ends the process, failing every later test that uses it.
// Clients do abort requests: a test that kills a step at a call cancels the context of the
// step's other requests in flight, as a Lambda timeout does against DynamoDB, which
// answers the next request regardless. This keeps the emulator up through an aborted
// request and still ends it on any other error.
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET') {
    return
  }
  console.error(err)
  process.exit(1)
})
