-- Switch a table's CDC capture instance so that newly added columns are captured,
-- without losing a change and without stopping the mssqlcdc stream
-- (docs/operations.md "Capture-instance switch"; docs/stream.md "Schema changes").
--
-- Run it in the source database as a member of db_owner, step by step: step 4 waits for
-- the stream, and step 5 must not run before step 4 says so. Set the variables in each
-- batch (a GO ends a batch and its variables). The script writes nothing but the CDC
-- configuration and the grant; the stream never changes the source.
--
--   @schema, @table    the source table
--   @old, @new         the capture instance the stream reads now, and the new one
--   @reader            the database user the stream logs in as

------------------------------------------------------------------------------------------
-- 1. Enable the new capture instance. It captures every column the table has now (or
--    list them in @captured_column_list). A table has at most two capture instances.
------------------------------------------------------------------------------------------
DECLARE @schema sysname = N'dbo', @table sysname = N'orders',
        @old sysname = N'dbo_orders', @new sysname = N'dbo_orders_v2', @reader sysname = N'cdc_reader';

IF (SELECT COUNT(*) FROM cdc.change_tables WHERE source_object_id = OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@table))) >= 2
    THROW 50001, N'The table already has two capture instances: disable the older one first (step 5 of the previous switch).', 1;

EXEC sys.sp_cdc_enable_table
     @source_schema    = @schema,
     @source_name      = @table,
     @capture_instance = @new,
     @role_name        = NULL,
     @supports_net_changes = 0;
GO

------------------------------------------------------------------------------------------
-- 2. Let the stream's login read the new change table (without it the first batch that
--    reaches the new instance fails with PermissionError naming this grant).
------------------------------------------------------------------------------------------
DECLARE @new sysname = N'dbo_orders_v2', @reader sysname = N'cdc_reader';
DECLARE @grant nvarchar(max) = N'GRANT SELECT ON ' + QUOTENAME(N'cdc') + N'.' + QUOTENAME(@new + N'_CT') + N' TO ' + QUOTENAME(@reader) + N';';
EXEC sys.sp_executesql @grant;
GO

------------------------------------------------------------------------------------------
-- 3. Check that both instances are listed, and when the new one starts (start_lsn: the
--    stream reads the old instance below it and the new one from it).
------------------------------------------------------------------------------------------
EXEC sys.sp_cdc_help_change_data_capture @source_schema = N'dbo', @source_name = N'orders';
GO

------------------------------------------------------------------------------------------
-- 4. Wait until every stream reading the table has written a capture_instance_switched
--    facts row and a later batch row. Run this in the lake's query engine (Spark, Athena,
--    DuckDB, ...), not in SQL Server; every app_id must show last_batch > switched_in:
--
--    SELECT app_id,
--           max(CASE WHEN event = 'capture_instance_switched' THEN batch_id END) AS switched_in,
--           max(CASE WHEN event IS NULL THEN batch_id END)                        AS last_batch
--    FROM ingestion_facts
--    WHERE target = '<bronze URL>'
--    GROUP BY app_id;
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- 5. Disable the old instance. Done before step 4, the changes only it held below the
--    new instance's start are lost: the stream stops with DataLossError (or, with
--    on_data_loss "resnapshot", re-snapshots into a new generation).
------------------------------------------------------------------------------------------
DECLARE @schema sysname = N'dbo', @table sysname = N'orders', @old sysname = N'dbo_orders';
EXEC sys.sp_cdc_disable_table
     @source_schema    = @schema,
     @source_name      = @table,
     @capture_instance = @old;
GO

-- 6. In the table spec: keep source.captureInstance when it is the default name
--    <schema>_<table> (it follows the table's newest instance); otherwise set it to the new
--    instance's name now that the old one is gone.
