-- Sample database for mssqlcdc: CDC on dbo.customers and dbo.orders, a least-privilege
-- reader login, and a few rows. Run by the mssql-init service with sqlcmd as sa:
--   sqlcmd -C -S mssql -U sa -P ... -b -v READER_PASSWORD=... -i 01-sample-cdc.sql
-- Every step checks first, so the script can run again.

IF DB_ID(N'shop') IS NULL
    CREATE DATABASE shop;
GO

-- Snapshot reads with isolation=snapshot need this (docs/reference/sqlserver-cdc.md §8.1);
-- READ COMMITTED reads do not.
ALTER DATABASE shop SET ALLOW_SNAPSHOT_ISOLATION ON;
GO

USE shop;
GO

-- CDC on the database (needs sysadmin): creates the cdc schema, the cdc user and
-- cdc.lsn_time_mapping.
IF (SELECT is_cdc_enabled FROM sys.databases WHERE name = N'shop') = 0
    EXEC sys.sp_cdc_enable_db;
GO

IF OBJECT_ID(N'dbo.customers') IS NULL
    CREATE TABLE dbo.customers (
        id         int            NOT NULL CONSTRAINT pk_customers PRIMARY KEY,
        name       nvarchar(100)  NOT NULL,
        email      varchar(200)   COLLATE SQL_Latin1_General_CP1_CI_AS NULL,
        country    char(2)        NULL,
        created_at datetime2(3)   NOT NULL CONSTRAINT df_customers_created DEFAULT SYSUTCDATETIME()
    );
GO

IF OBJECT_ID(N'dbo.orders') IS NULL
    CREATE TABLE dbo.orders (
        id          bigint            NOT NULL CONSTRAINT pk_orders PRIMARY KEY,
        customer_id int               NOT NULL,
        status      varchar(20)       COLLATE SQL_Latin1_General_CP1_CI_AS NOT NULL,
        amount      decimal(18,2)     NOT NULL,
        placed_at   datetimeoffset(3) NOT NULL,
        ref         uniqueidentifier  NOT NULL CONSTRAINT df_orders_ref DEFAULT NEWID(),
        note        nvarchar(max)     NULL
    );
GO

-- One capture instance per table, default names dbo_customers and dbo_orders, no gating
-- role (@role_name = NULL): access is by SELECT on the source table and the change table.
IF NOT EXISTS (SELECT 1 FROM sys.tables WHERE object_id = OBJECT_ID(N'dbo.customers') AND is_tracked_by_cdc = 1)
    EXEC sys.sp_cdc_enable_table
        @source_schema = N'dbo',
        @source_name = N'customers',
        @role_name = NULL,
        @supports_net_changes = 0;
GO

IF NOT EXISTS (SELECT 1 FROM sys.tables WHERE object_id = OBJECT_ID(N'dbo.orders') AND is_tracked_by_cdc = 1)
    EXEC sys.sp_cdc_enable_table
        @source_schema = N'dbo',
        @source_name = N'orders',
        @role_name = NULL,
        @supports_net_changes = 0;
GO

-- The least-privilege reader (docs/permissions.md, docs/reference/sqlserver-cdc.md §9):
-- SELECT on each source table and on each capture instance's change table, nothing
-- else. No db_owner, no VIEW SERVER STATE, no msdb, no other cdc.* tables.
IF SUSER_ID(N'cdc_reader') IS NULL
    CREATE LOGIN cdc_reader WITH PASSWORD = N'$(READER_PASSWORD)', CHECK_POLICY = OFF;
GO
IF USER_ID(N'cdc_reader') IS NULL
    CREATE USER cdc_reader FOR LOGIN cdc_reader;
GO
GRANT SELECT ON dbo.customers TO cdc_reader;
GRANT SELECT ON dbo.orders TO cdc_reader;
GRANT SELECT ON cdc.dbo_customers_CT TO cdc_reader;
GRANT SELECT ON cdc.dbo_orders_CT TO cdc_reader;
GO

-- A few rows so the capture job has something to read.
IF NOT EXISTS (SELECT 1 FROM dbo.customers)
BEGIN
    INSERT INTO dbo.customers (id, name, email, country) VALUES
        (1, N'Ana Souza', 'ana@example.com', 'BR'),
        (2, N'Bob Stone', 'bob@example.com', 'US'),
        (3, N'Chloé Martin', 'chloe@example.com', 'FR');
    INSERT INTO dbo.orders (id, customer_id, status, amount, placed_at, note) VALUES
        (1, 1, 'new', 10.50, SYSDATETIMEOFFSET(), NULL),
        (2, 2, 'paid', 99.99, SYSDATETIMEOFFSET(), N'gift'),
        (3, 3, 'new', 5.00, SYSDATETIMEOFFSET(), NULL);
    UPDATE dbo.orders SET status = 'shipped' WHERE id = 2;
    DELETE FROM dbo.orders WHERE id = 3;
END
GO

PRINT 'mssqlcdc: database shop ready with CDC on dbo.customers and dbo.orders';
GO
