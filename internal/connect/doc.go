// Package connect opens what a table spec names, once for every entry point: the Lambda
// functions (functions/stream, functions/snapshot, functions/seed) and the CLI
// (cmd/mssqlcdc) call it, so the spec, the password and the tables are resolved the same
// way everywhere.
//
//   - the spec: from the MSSQLCDC_SPEC environment variable (SpecFromEnv, as Terraform
//     writes it) or a file (SpecFile);
//   - the password: from the environment variable the spec names, or from AWS Secrets
//     Manager (an AWS client is built only when the spec names a secret ARN);
//   - SQL Server (core/source/mssql) with that password;
//   - bronze, the facts table and the checkpoint prefix (deltalog/location, with the spec's
//     storage settings), as the stream's Deps, the snapshot steps' or the seed steps' Deps.
//
// Nothing here holds state: a warm Lambda keeps what it opened itself. It is the
// composition root, so it lives outside core/: core imports no AWS SDK and no Lambda
// library (core/deps_test.go checks it), and this package is where they meet the domain.
package connect
