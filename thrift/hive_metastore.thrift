// Wire-compatible subset of the Apache Hive Metastore Thrift interface.
//
// Only what this project serves is declared: catalog objects (databases, tables,
// partitions, functions), column statistics, and the handful of calls that JVM clients
// (Spark's built-in Hive 2.3 client) make while connecting or running DDL.
//
// Compatibility rules this file keeps:
//   * struct names, field ids and field wire types are those of Apache Hive;
//   * method names, argument ids and exception ids are those of Apache Hive;
//   * Hive 4 additions (catName, writeId, isStatsCompliant, engine, histogram,
//     timestamp statistics...) are declared `optional`, so Hive 2.3 and 3.x peers skip
//     them and we accept requests that omit them.
// Where Hive versions disagree, the newest Hive layout is used and the difference is
// noted next to the declaration. tests/server/test_idl.py checks every declaration here
// against the classes generated from Hive 2.3.10 (shipped in pyspark's jars).
//
// Regenerate the Python package with scripts/gen_thrift.sh.

include "fb303.thrift"

namespace py metastore.api.hive_metastore
namespace java org.apache.hadoop.hive.metastore.api

// ---------------------------------------------------------------------------------------
// Constants clients look for in table/partition parameters and filters
// ---------------------------------------------------------------------------------------

const string DDL_TIME = "transient_lastDdlTime"
const string HIVE_FILTER_FIELD_OWNER = "hive_filter_field_owner__"
const string HIVE_FILTER_FIELD_PARAMS = "hive_filter_field_params__"
const string HIVE_FILTER_FIELD_LAST_ACCESS = "hive_filter_field_last_access__"
const string TABLE_IS_TRANSACTIONAL = "transactional"
const string TABLE_TRANSACTIONAL_PROPERTIES = "transactional_properties"

// Values of Table.accessType (Hive 4).
const i8 ACCESSTYPE_NONE = 1
const i8 ACCESSTYPE_READONLY = 2
const i8 ACCESSTYPE_WRITEONLY = 4
const i8 ACCESSTYPE_READWRITE = 8

// ---------------------------------------------------------------------------------------
// Enums (all travel as i32)
// ---------------------------------------------------------------------------------------

enum PrincipalType {
  USER = 1,
  ROLE = 2,
  GROUP = 3,
}

enum PartitionEventType {
  LOAD_DONE = 1,
}

enum FunctionType {
  JAVA = 1,
}

enum ResourceType {
  JAR = 1,
  FILE = 2,
  ARCHIVE = 3,
}

// Where a SerDe's schema comes from (Hive 3+).
enum SerdeType {
  HIVE = 1,
  SCHEMA_REGISTRY = 2,
}

// Native database, or one mapped onto a remote data connector (Hive 4).
enum DatabaseType {
  NATIVE = 1,
  REMOTE = 2,
}

// Capabilities a client can announce in GetTableRequest / GetTablesRequest.
enum ClientCapability {
  TEST_CAPABILITY = 1,
  INSERT_ONLY_TABLES = 2,
}

// ---------------------------------------------------------------------------------------
// Small shared structs
// ---------------------------------------------------------------------------------------

// One column: name, Hive type string (e.g. "int", "map<string,bigint>") and comment.
struct FieldSchema {
  1: string name,
  2: string type,
  3: string comment,
}

// Free-form properties passed along with create/alter/drop calls for hooks.
struct EnvironmentContext {
  1: map<string, string> properties,
}

struct ClientCapabilities {
  1: required list<ClientCapability> values,
}

// ---------------------------------------------------------------------------------------
// Privileges
// ---------------------------------------------------------------------------------------

struct PrivilegeGrantInfo {
  1: string privilege,
  2: i32 createTime,
  3: string grantor,
  4: PrincipalType grantorType,
  5: bool grantOption,
}

// Grants keyed by principal name, one map per principal kind.
struct PrincipalPrivilegeSet {
  1: map<string, list<PrivilegeGrantInfo>> userPrivileges,
  2: map<string, list<PrivilegeGrantInfo>> groupPrivileges,
  3: map<string, list<PrivilegeGrantInfo>> rolePrivileges,
}

// ---------------------------------------------------------------------------------------
// Databases
// ---------------------------------------------------------------------------------------

// Hive 2.3 stops at field 7; 8-13 are Hive 3/4 additions.
struct Database {
  1: string name,
  2: string description,
  3: string locationUri,
  4: map<string, string> parameters,
  5: optional PrincipalPrivilegeSet privileges,
  6: optional string ownerName,
  7: optional PrincipalType ownerType,
  8: optional string catalogName,
  9: optional i32 createTime,           // seconds since the epoch
  10: optional string managedLocationUri,
  11: optional DatabaseType type,
  12: optional string connector_name,
  13: optional string remote_dbname,
}

// ---------------------------------------------------------------------------------------
// Storage
// ---------------------------------------------------------------------------------------

// Hive 2.3 has fields 1-3; 4-7 came with the schema registry work (Hive 3).
struct SerDeInfo {
  1: string name,
  2: string serializationLib,             // SerDe class name
  3: map<string, string> parameters,
  4: optional string description,
  5: optional string serializerClass,
  6: optional string deserializerClass,
  7: optional SerdeType serdeType,
}

// A sort column; order is 1 for ascending, 0 for descending.
struct Order {
  1: string col,
  2: i32 order,
}

// The map's keys are lists. Python cannot hash a list, so the key type is marked
// immutable: generated code (and the C codec) decode each key as a tuple. The annotation
// only affects Python; the wire format is unchanged.
struct SkewedInfo {
  1: list<string> skewedColNames,
  2: list<list<string>> skewedColValues,
  3: map<list<string> (python.immutable = ""), string> skewedColValueLocationMaps,
}

// Physical layout of a table or partition. Identical in every Hive version.
struct StorageDescriptor {
  1: list<FieldSchema> cols,
  2: string location,
  3: string inputFormat,
  4: string outputFormat,
  5: bool compressed,
  6: i32 numBuckets,
  7: SerDeInfo serdeInfo,
  8: list<string> bucketCols,
  9: list<Order> sortCols,
  10: map<string, string> parameters,
  11: optional SkewedInfo skewedInfo,
  12: optional bool storedAsSubDirectories,
}

// Materialized-view bookkeeping (Hive 3+). Hive 4 also has
// `7: optional list<SourceTable> sourceTables`; it is left out here because SourceTable
// embeds a whole Table, and a reader that does not declare an id simply skips it.
struct CreationMetadata {
  1: required string catName,
  2: required string dbName,
  3: required string tblName,
  4: required set<string> tablesUsed,
  5: optional string validTxnList,
  6: optional i64 materializationTime,
}

// ---------------------------------------------------------------------------------------
// Column statistics
// ---------------------------------------------------------------------------------------
//
// bitVectors holds an NDV sketch in Hive's serialized HLL ("HLL...") or FM ("FM...")
// format; histogram holds a serialized DataSketches KLL float sketch. Hive 2.3 declares
// bitVectors as `string`: same wire type (STRING) as `binary`.

struct BooleanColumnStatsData {
  1: required i64 numTrues,
  2: required i64 numFalses,
  3: required i64 numNulls,
  4: optional binary bitVectors,
}

struct DoubleColumnStatsData {
  1: optional double lowValue,
  2: optional double highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,           // Hive 4
}

struct LongColumnStatsData {
  1: optional i64 lowValue,
  2: optional i64 highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,           // Hive 4
}

struct StringColumnStatsData {
  1: required i64 maxColLen,
  2: required double avgColLen,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
}

struct BinaryColumnStatsData {
  1: required i64 maxColLen,
  2: required double avgColLen,
  3: required i64 numNulls,
  4: optional binary bitVectors,
}

// A decimal as an unscaled big-endian two's-complement integer and a scale.
struct Decimal {
  1: required binary unscaled,
  3: required i16 scale,
}

struct DecimalColumnStatsData {
  1: optional Decimal lowValue,
  2: optional Decimal highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,           // Hive 4
}

struct Date {
  1: required i64 daysSinceEpoch,
}

struct DateColumnStatsData {
  1: optional Date lowValue,
  2: optional Date highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,           // Hive 4
}

// Hive 4 only. Older Hive kept timestamp statistics in longStats.
struct Timestamp {
  1: required i64 secondsSinceEpoch,
}

struct TimestampColumnStatsData {
  1: optional Timestamp lowValue,
  2: optional Timestamp highValue,
  3: required i64 numNulls,
  4: required i64 numDVs,
  5: optional binary bitVectors,
  6: optional binary histogram,
}

// Exactly one member is set. Member 8 is unknown to Hive 2.3/3.x readers, which then see
// an empty union.
union ColumnStatisticsData {
  1: BooleanColumnStatsData booleanStats,
  2: LongColumnStatsData longStats,
  3: DoubleColumnStatsData doubleStats,
  4: StringColumnStatsData stringStats,
  5: BinaryColumnStatsData binaryStats,
  6: DecimalColumnStatsData decimalStats,
  7: DateColumnStatsData dateStats,
  8: TimestampColumnStatsData timestampStats,
}

struct ColumnStatisticsObj {
  1: required string colName,
  2: required string colType,
  3: required ColumnStatisticsData statsData,
}

// Which table (isTblLevel) or partition (partName) the statistics belong to.
struct ColumnStatisticsDesc {
  1: required bool isTblLevel,
  2: required string dbName,
  3: required string tableName,
  4: optional string partName,
  5: optional i64 lastAnalyzed,
  6: optional string catName,             // Hive 3+
}

struct ColumnStatistics {
  1: required ColumnStatisticsDesc statsDesc,
  2: required list<ColumnStatisticsObj> statsObj,
  3: optional bool isStatsCompliant,      // Hive 4
  4: optional string engine = "hive",     // Hive 4
}

struct AggrStats {
  1: required list<ColumnStatisticsObj> colStats,
  2: required i64 partsFound,             // partitions that had stats for every column asked
  3: optional bool isStatsCompliant,      // Hive 4
}

// Hive 2.3/3.x send only fields 1-2. Early Hive 4 builds made `engine` required;
// HIVE-27984 made it optional again, and a missing engine means "hive".
struct SetPartitionsStatsRequest {
  1: required list<ColumnStatistics> colStats,
  2: optional bool needMerge,
  3: optional i64 writeId = -1,
  4: optional string validWriteIdList,
  5: optional string engine = "hive",
}

struct SetPartitionsStatsResponse {
  1: required bool result,
}

struct TableStatsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<string> colNames,
  4: optional string catName,
  5: optional string validWriteIdList,
  6: optional string engine = "hive",
  7: optional i64 id = -1,                // table id
}

struct TableStatsResult {
  1: required list<ColumnStatisticsObj> tableStats,
  2: optional bool isStatsCompliant,
}

struct PartitionsStatsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<string> colNames,
  4: required list<string> partNames,
  5: optional string catName,
  6: optional string validWriteIdList,
  7: optional string engine = "hive",
}

struct PartitionsStatsResult {
  1: required map<string, list<ColumnStatisticsObj>> partStats,
  2: optional bool isStatsCompliant,
}

// Hive 4.1 (HIVE-28655). No part_names and tableLevel=false on a partitioned table means
// every partition; no col_names means every column.
struct DeleteColumnStatisticsRequest {
  1: optional string cat_name,
  2: required string db_name,
  3: required string tbl_name,
  4: optional list<string> part_names,
  5: optional list<string> col_names,
  6: optional string engine = "hive",
  7: optional bool tableLevel = false,
}

// ---------------------------------------------------------------------------------------
// Tables and partitions
// ---------------------------------------------------------------------------------------

// Free-form metadata shared between engines (Hive 4). Declared only because
// GetPartitionsByNamesResult carries one.
struct ObjectDictionary {
  1: required map<string, list<binary>> values,
}

// Hive 2.3 stops at 15 in Apache's IDL, but the Hive 2.3.10 classes in Spark's jars also
// carry `16: optional string catName`; Hive 3+ put catName at 17 and a struct at 16. A
// reader meeting a field whose wire type differs from its declaration skips it, so the
// clash costs nothing but that field. Ids 16-21 are the same in Hive 3 and 4; 22 and 25
// agree across the Hive 4 sources checked. 23/24 (required capabilities), 26 (fileMetadata),
// 27 (dictionary) and 28 (txnId) are left out: readers skip ids they do not declare.
struct Table {
  1: string tableName,
  2: string dbName,
  3: string owner,
  4: i32 createTime,
  5: i32 lastAccessTime,
  6: i32 retention,
  7: StorageDescriptor sd,
  8: list<FieldSchema> partitionKeys,
  9: map<string, string> parameters,
  10: string viewOriginalText,
  11: string viewExpandedText,
  12: string tableType,                   // MANAGED_TABLE, EXTERNAL_TABLE, VIRTUAL_VIEW...
  13: optional PrincipalPrivilegeSet privileges,
  14: optional bool temporary = false,
  15: optional bool rewriteEnabled,
  16: optional CreationMetadata creationMetadata,
  17: optional string catName,
  // No default here (Hive 3+'s IDL has `= PrincipalType.USER`): every client generated from a Hive 3+ IDL sends
  // the field and none generated from Hive 2's can, so the server must see whether it came (catalog fields,
  // metastore/wire/generations.py). Our own conversions set it explicitly.
  18: optional PrincipalType ownerType,
  19: optional i64 writeId = -1,
  20: optional bool isStatsCompliant,
  21: optional ColumnStatistics colStats,
  22: optional i8 accessType,
  25: optional i64 id,
}

// Hive 2.3 stops at 8. 13 (fileMetadata) is left out.
struct Partition {
  1: list<string> values,
  2: string dbName,
  3: string tableName,
  4: i32 createTime,
  5: i32 lastAccessTime,
  6: StorageDescriptor sd,
  7: map<string, string> parameters,
  8: optional PrincipalPrivilegeSet privileges,
  9: optional string catName,
  10: optional i64 writeId = -1,
  11: optional bool isStatsCompliant,
  12: optional ColumnStatistics colStats,
}

// A Hive 2.3 index (removed in Hive 3). Declared so get_indexes can answer old clients.
struct Index {
  1: string indexName,
  2: string indexHandlerClass,
  3: string dbName,
  4: string origTableName,
  5: i32 createTime,
  6: i32 lastAccessTime,
  7: string indexTableName,
  8: StorageDescriptor sd,
  9: map<string, string> parameters,
  10: bool deferredRebuild,
}

// One row of get_table_meta.
struct TableMeta {
  1: required string dbName,
  2: required string tableName,
  3: required string tableType,
  4: optional string comments,
  5: optional string catName,
  6: optional string ownerName,           // Hive 4.1
  7: optional PrincipalType ownerType,    // Hive 4.1
}

// Which fields of returned objects the client wants (Hive 4 projection).
struct GetProjectionsSpec {
  1: list<string> fieldList,
  2: string includeParamKeyPattern,
  3: string excludeParamKeyPattern,
}

// There is no field 5 in any Hive version.
struct GetTableRequest {
  1: required string dbName,
  2: required string tblName,
  3: optional ClientCapabilities capabilities,
  4: optional string catName,
  6: optional string validWriteIdList,
  7: optional bool getColumnStats,
  8: optional list<string> processorCapabilities,
  9: optional string processorIdentifier,
  10: optional string engine = "hive",
  11: optional i64 id = -1,
}

struct GetTableResult {
  1: required Table table,
  2: optional bool isStatsCompliant,
}

struct GetTablesRequest {
  1: required string dbName,
  2: optional list<string> tblNames,
  3: optional ClientCapabilities capabilities,
  4: optional string catName,
  5: optional list<string> processorCapabilities,
  6: optional string processorIdentifier,
  7: optional GetProjectionsSpec projectionSpec,
  8: optional string tablesPattern,
}

struct GetTablesResult {
  1: required list<Table> tables,
}

struct AddPartitionsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<Partition> parts,
  4: required bool ifNotExists,
  5: optional bool needResult = true,
  6: optional string catName,
  7: optional string validWriteIdList,
  8: optional bool skipColumnSchemaForPartition,
  9: optional list<FieldSchema> partitionColSchema,
  10: optional EnvironmentContext environmentContext,
}

struct AddPartitionsResult {
  1: optional list<Partition> partitions,
  2: optional bool isStatsCompliant,
  3: optional list<FieldSchema> partitionColSchema,
}

// A serialized Hive expression selecting partitions to drop.
struct DropPartitionsExpr {
  1: required binary expr,
  2: optional i32 partArchiveLevel,
}

// Partitions to drop: by name, or by expression.
union RequestPartsSpec {
  1: list<string> names,
  2: list<DropPartitionsExpr> exprs,
}

struct DropPartitionsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required RequestPartsSpec parts,
  4: optional bool deleteData,
  5: optional bool ifExists = true,
  6: optional bool ignoreProtection,
  7: optional EnvironmentContext environmentContext,
  8: optional bool needResult = true,
  9: optional string catName,
  10: optional bool skipColumnSchemaForPartition,
}

struct DropPartitionsResult {
  1: optional list<Partition> partitions,
}

// get_partition_values: distinct values of some partition keys (Hive 2.3 and later).
struct PartitionValuesRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<FieldSchema> partitionKeys,
  4: optional bool applyDistinct = true,
  5: optional string filter,
  6: optional list<FieldSchema> partitionOrder,
  7: optional bool ascending = true,
  8: optional i64 maxParts = -1,
  9: optional string catName,
}

struct PartitionValuesRow {
  1: required list<string> row,
}

struct PartitionValuesResponse {
  1: required list<PartitionValuesRow> partitionValues,
}

// Hive 4 (HIVE-21223 and later).
struct GetPartitionsByNamesRequest {
  1: required string db_name,
  2: required string tbl_name,
  3: optional list<string> names,
  4: optional bool get_col_stats,
  5: optional list<string> processorCapabilities,
  6: optional string processorIdentifier,
  7: optional string engine = "hive",
  8: optional string validWriteIdList,
  9: optional bool getFileMetadata,
  10: optional i64 id = -1,
  11: optional bool skipColumnSchemaForPartition,
  12: optional string includeParamKeyPattern,
  13: optional string excludeParamKeyPattern,
}

struct GetPartitionsByNamesResult {
  1: required list<Partition> partitions,
  2: optional ObjectDictionary dictionary,
}

// ---------------------------------------------------------------------------------------
// Constraints (answered with empty lists; declared because clients ask at DDL time)
// ---------------------------------------------------------------------------------------

struct SQLPrimaryKey {
  1: string table_db,
  2: string table_name,
  3: string column_name,
  4: i32 key_seq,
  5: string pk_name,
  6: bool enable_cstr,
  7: bool validate_cstr,
  8: bool rely_cstr,
  9: optional string catName,
}

struct SQLForeignKey {
  1: string pktable_db,
  2: string pktable_name,
  3: string pkcolumn_name,
  4: string fktable_db,
  5: string fktable_name,
  6: string fkcolumn_name,
  7: i32 key_seq,
  8: i32 update_rule,
  9: i32 delete_rule,
  10: string fk_name,
  11: string pk_name,
  12: bool enable_cstr,
  13: bool validate_cstr,
  14: bool rely_cstr,
  15: optional string catName,
}

struct PrimaryKeysRequest {
  1: required string db_name,
  2: required string tbl_name,
  3: optional string catName,
}

struct PrimaryKeysResponse {
  1: required list<SQLPrimaryKey> primaryKeys,
}

// Either side may be left empty to list all keys pointing at / from a table.
struct ForeignKeysRequest {
  1: string parent_db_name,
  2: string parent_tbl_name,
  3: string foreign_db_name,
  4: string foreign_tbl_name,
  5: optional string catName,
}

struct ForeignKeysResponse {
  1: required list<SQLForeignKey> foreignKeys,
}

// ---------------------------------------------------------------------------------------
// Functions, notifications
// ---------------------------------------------------------------------------------------

// A legacy user-defined type (Hive's TYPES / TYPE_FIELDS tables; only Hive's own tests use it).
struct Type {
  1: string name,
  2: optional string type1,
  3: optional string type2,
  4: optional list<FieldSchema> fields,
}

struct ResourceUri {
  1: ResourceType resourceType,
  2: string uri,
}

// A permanent user-defined function.
struct Function {
  1: string functionName,
  2: string dbName,
  3: string className,
  4: string ownerName,
  5: PrincipalType ownerType,
  6: i32 createTime,
  7: FunctionType functionType,
  8: list<ResourceUri> resourceUris,
  9: optional string catName,
}

struct GetAllFunctionsResponse {
  1: optional list<Function> functions,
}

struct CurrentNotificationEventId {
  1: required i64 eventId,
}

// ---------------------------------------------------------------------------------------
// issue 11: split-filtering indexes (ours, not Hive's; used by the metastore_* calls below)
// ---------------------------------------------------------------------------------------

// A data file an index part covers, as the index saw it (a file that differs now is not covered).
struct MetastoreIndexFile {
  1: required string path,
  2: required i64 size,
  3: required i64 mtimeNs
}

// One index file: its key (partition name, data file path at STRIPE level, "" for the table), the
// partition it belongs to ("" when unpartitioned), its location and size, and the data files it covers.
struct MetastoreIndexPart {
  1: required string key,
  2: required string partitionName,
  3: required string location,
  4: required i64 size,
  5: list<MetastoreIndexFile> files
}

// An index record. indexType: btree | bloom | minmax; level: STRIPE | PARTITION | TABLE;
// state: CREATING | READY; partitions unset means every partition.
struct MetastoreIndex {
  1: required string name,
  2: required string dbName,
  3: required string tableName,
  4: required string columnName,
  5: string columnType,
  6: required string indexType,
  7: string level,
  8: map<string, string> properties,
  9: optional list<string> partitions,
  10: string location,
  11: string state,
  12: i64 createTime,
  13: i64 buildTime,
  14: string owner,
  15: bool tableExists,
  16: list<MetastoreIndexPart> parts
}

// The parts of a finished build (CREATE or UPDATE INDEX); the index becomes READY.
struct MetastoreFinishIndexBuild {
  1: required string name,
  2: required list<MetastoreIndexPart> parts,
  3: i64 buildTime,
  4: optional list<string> partitions,
  5: required string dbName,
  6: required string tableName
}

// A byte range of a data file; fileSize/fileMtimeNs as the planner listed the file (else the server
// looks the file up).
struct MetastoreSplit {
  1: required string path,
  2: required i64 start,
  3: required i64 length,
  4: optional i64 fileSize,
  5: optional i64 fileMtimeNs
}

// predicate: the JSON form documented in the README (metastore/index/predicate.py).
struct MetastoreFilterSplitsRequest {
  1: required string dbName,
  2: required string tableName,
  3: required string predicate,
  4: required list<MetastoreSplit> splits
}

struct MetastoreIndexCount {
  1: string indexName,
  2: string indexType,
  3: string columnName,
  4: i64 considered,
  5: i64 kept
}

// keptPositions: positions (in the request) of the splits that may match; keptSplits: those splits.
struct MetastoreFilterSplitsResponse {
  1: list<i32> keptPositions,
  2: list<MetastoreSplit> keptSplits,
  3: list<MetastoreIndexCount> counts,
  4: list<string> warnings
}

// ---------------------------------------------------------------------------------------
// Exceptions: every one is a single message string at id 1.
// ---------------------------------------------------------------------------------------

exception MetaException {
  1: string message,
}

exception UnknownTableException {
  1: string message,
}

exception UnknownDBException {
  1: string message,
}

exception AlreadyExistsException {
  1: string message,
}

exception InvalidPartitionException {
  1: string message,
}

exception UnknownPartitionException {
  1: string message,
}

exception InvalidObjectException {
  1: string message,
}

exception NoSuchObjectException {
  1: string message,
}

exception InvalidOperationException {
  1: string message,
}

exception ConfigValSecurityException {
  1: string message,
}

exception InvalidInputException {
  1: string message,
}

// ---------------------------------------------------------------------------------------
// issue 10: per-file partial statistics (extension structs, not Hive's)
// ---------------------------------------------------------------------------------------
//
// What ANALYZE computed for one data file of a table or partition, kept so that a re-ANALYZE
// from any host (a shell, a Spark driver, a cron job) reads only files that changed. A file is
// known by its path and is valid only for the size, modification time (ns) and version (an
// object store's ETag; empty for local files) it was computed from. `info` and the partials
// (one per column and type, keyed as the client chooses) are opaque bytes to the server.

struct MetastoreFilePartials {
  1: required string path,
  2: required i64 size,
  3: required i64 mtimeNs,
  4: optional string version,
  5: optional string partName,        // unset: a file of the (unpartitioned) table itself
  6: optional i64 numRows,
  7: optional i64 rawDataSize,
  8: optional binary info,
  9: optional map<string, binary> partials,
}

struct MetastoreGetFilePartialsRequest {
  1: required string dbName,
  2: required string tblName,
  3: optional list<string> partNames,  // only files of these partitions (all of the table's if unset)
  4: optional list<string> paths,      // only these files
  5: optional string catName,
}

struct MetastoreGetFilePartialsResult {
  1: required list<MetastoreFilePartials> files,
}

struct MetastorePutFilePartialsRequest {
  1: required string dbName,
  2: required string tblName,
  3: required list<MetastoreFilePartials> files,
  4: optional string catName,
}

struct MetastoreDeleteFilePartialsRequest {
  1: required string dbName,
  2: required string tblName,
  3: optional list<string> partNames,  // only files of these partitions
  4: optional list<string> paths,      // only these files (both unset: every file of the table)
  5: optional string catName,
}

// ---------------------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------------------
//
// Result structs carry the return value at field 0 and each exception at its throws id;
// the throws ids below are therefore as much a part of the wire format as argument ids.
// Note that some of Hive's exception fields are named out of sequence (drop_table's
// `2: MetaException o3`): the id is what travels, the name is kept for fidelity.

service ThriftHiveMetastore extends fb303.FacebookService {

  // --- session and configuration -------------------------------------------------------

  string getMetaConf(1: string key) throws (1: MetaException o1)
  void setMetaConf(1: string key, 2: string value) throws (1: MetaException o1)

  // Value of a server configuration key, or defaultValue when unset.
  string get_config_value(1: string name, 2: string defaultValue)
      throws (1: ConfigValSecurityException o1)

  // Sent by JVM clients right after connecting when SASL is off; returns the groups.
  list<string> set_ugi(1: string user_name, 2: list<string> group_names)
      throws (1: MetaException o1)

  // --- databases -----------------------------------------------------------------------

  void create_database(1: Database database)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3)
  Database get_database(1: string name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  void drop_database(1: string name, 2: bool deleteData, 3: bool cascade)
      throws (1: NoSuchObjectException o1, 2: InvalidOperationException o2, 3: MetaException o3)
  list<string> get_databases(1: string pattern) throws (1: MetaException o1)
  list<string> get_all_databases() throws (1: MetaException o1)
  void alter_database(1: string dbname, 2: Database db)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  // --- tables --------------------------------------------------------------------------

  list<FieldSchema> get_fields(1: string db_name, 2: string table_name)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  list<FieldSchema> get_fields_with_environment_context(1: string db_name, 2: string table_name,
      3: EnvironmentContext environment_context)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  // Columns followed by partition keys.
  list<FieldSchema> get_schema(1: string db_name, 2: string table_name)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)
  list<FieldSchema> get_schema_with_environment_context(1: string db_name, 2: string table_name,
      3: EnvironmentContext environment_context)
      throws (1: MetaException o1, 2: UnknownTableException o2, 3: UnknownDBException o3)

  void create_table(1: Table tbl)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: NoSuchObjectException o4)
  void create_table_with_environment_context(1: Table tbl, 2: EnvironmentContext environment_context)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: NoSuchObjectException o4)

  void drop_table(1: string dbname, 2: string name, 3: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o3)
  void drop_table_with_environment_context(1: string dbname, 2: string name, 3: bool deleteData,
      4: EnvironmentContext environment_context)
      throws (1: NoSuchObjectException o1, 2: MetaException o3)
  // Hive 3+.
  void truncate_table(1: string dbName, 2: string tableName, 3: list<string> partNames)
      throws (1: MetaException o1)

  list<string> get_tables(1: string db_name, 2: string pattern) throws (1: MetaException o1)
  list<string> get_tables_by_type(1: string db_name, 2: string pattern, 3: string tableType)
      throws (1: MetaException o1)
  list<TableMeta> get_table_meta(1: string db_patterns, 2: string tbl_patterns,
      3: list<string> tbl_types) throws (1: MetaException o1)
  list<string> get_all_tables(1: string db_name) throws (1: MetaException o1)

  Table get_table(1: string dbname, 2: string tbl_name)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  // Hive 3+ declares no exceptions here; Hive 2.3 declares the three below. Keeping them
  // lets the server report errors to 2.3 clients; newer clients skip the unknown ids.
  list<Table> get_table_objects_by_name(1: string dbname, 2: list<string> tbl_names)
      throws (1: MetaException o1, 2: InvalidOperationException o2, 3: UnknownDBException o3)
  // What Hive 2.3+ JVM clients use for getTable().
  GetTableResult get_table_req(1: GetTableRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetTablesResult get_table_objects_by_name_req(1: GetTablesRequest req)
      throws (1: MetaException o1, 2: InvalidOperationException o2, 3: UnknownDBException o3)
  list<string> get_table_names_by_filter(1: string dbname, 2: string filter, 3: i16 max_tables = -1)
      throws (1: MetaException o1, 2: InvalidOperationException o2, 3: UnknownDBException o3)

  void alter_table(1: string dbname, 2: string tbl_name, 3: Table new_tbl)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  void alter_table_with_environment_context(1: string dbname, 2: string tbl_name, 3: Table new_tbl,
      4: EnvironmentContext environment_context)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  // cascade: also apply column changes to every existing partition.
  void alter_table_with_cascade(1: string dbname, 2: string tbl_name, 3: Table new_tbl, 4: bool cascade)
      throws (1: InvalidOperationException o1, 2: MetaException o2)

  // --- partitions: create --------------------------------------------------------------

  Partition add_partition(1: Partition new_part)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  Partition add_partition_with_environment_context(1: Partition new_part,
      2: EnvironmentContext environment_context)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  i32 add_partitions(1: list<Partition> new_parts)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  AddPartitionsResult add_partitions_req(1: AddPartitionsRequest request)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  Partition append_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  Partition append_partition_with_environment_context(1: string db_name, 2: string tbl_name,
      3: list<string> part_vals, 4: EnvironmentContext environment_context)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  Partition append_partition_by_name(1: string db_name, 2: string tbl_name, 3: string part_name)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  Partition append_partition_by_name_with_environment_context(1: string db_name, 2: string tbl_name,
      3: string part_name, 4: EnvironmentContext environment_context)
      throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)

  // --- partitions: drop ----------------------------------------------------------------

  bool drop_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals,
      4: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  bool drop_partition_with_environment_context(1: string db_name, 2: string tbl_name,
      3: list<string> part_vals, 4: bool deleteData, 5: EnvironmentContext environment_context)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  bool drop_partition_by_name(1: string db_name, 2: string tbl_name, 3: string part_name,
      4: bool deleteData)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  bool drop_partition_by_name_with_environment_context(1: string db_name, 2: string tbl_name,
      3: string part_name, 4: bool deleteData, 5: EnvironmentContext environment_context)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  DropPartitionsResult drop_partitions_req(1: DropPartitionsRequest req)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)

  // --- partitions: read ----------------------------------------------------------------
  // max_parts is i16 as in Hive; -1 means no limit.

  Partition get_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  Partition get_partition_with_auth(1: string db_name, 2: string tbl_name, 3: list<string> part_vals,
      4: string user_name, 5: list<string> group_names)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  Partition get_partition_by_name(1: string db_name, 2: string tbl_name, 3: string part_name)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  list<Partition> get_partitions(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<Partition> get_partitions_with_auth(1: string db_name, 2: string tbl_name,
      3: i16 max_parts = -1, 4: string user_name, 5: list<string> group_names)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  // Hive 2.3 declared only `1: MetaException o2`; Hive 3+ as below. A 2.3 client reads our
  // NoSuchObjectException (id 1, same {1: message} shape) as a MetaException.
  list<string> get_partition_names(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)

  // part_vals may be shorter than the partition keys; "" matches any value.
  list<Partition> get_partitions_ps(1: string db_name, 2: string tbl_name,
      3: list<string> part_vals, 4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_ps_with_auth(1: string db_name, 2: string tbl_name,
      3: list<string> part_vals, 4: i16 max_parts = -1, 5: string user_name,
      6: list<string> group_names)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<string> get_partition_names_ps(1: string db_name, 2: string tbl_name,
      3: list<string> part_vals, 4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  PartitionValuesResponse get_partition_values(1: PartitionValuesRequest request)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  // filter is Hive's metastore filter language (key = "v" and key2 < 3 ...).
  list<Partition> get_partitions_by_filter(1: string db_name, 2: string tbl_name, 3: string filter,
      4: i16 max_parts = -1)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  i32 get_num_partitions_by_filter(1: string db_name, 2: string tbl_name, 3: string filter)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  list<Partition> get_partitions_by_names(1: string db_name, 2: string tbl_name,
      3: list<string> names)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  // Hive 4.
  GetPartitionsByNamesResult get_partitions_by_names_req(1: GetPartitionsByNamesRequest req)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  // --- partitions: alter ---------------------------------------------------------------

  void alter_partition(1: string db_name, 2: string tbl_name, 3: Partition new_part)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  void alter_partitions(1: string db_name, 2: string tbl_name, 3: list<Partition> new_parts)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  void alter_partitions_with_environment_context(1: string db_name, 2: string tbl_name,
      3: list<Partition> new_parts, 4: EnvironmentContext environment_context)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  void alter_partition_with_environment_context(1: string db_name, 2: string tbl_name,
      3: Partition new_part, 4: EnvironmentContext environment_context)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  // Moves the partition identified by part_vals to new_part's values.
  void rename_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals,
      4: Partition new_part)
      throws (1: InvalidOperationException o1, 2: MetaException o2)

  // --- partition names -----------------------------------------------------------------

  // "a=1/b=x" -> ["1", "x"]
  list<string> partition_name_to_vals(1: string part_name) throws (1: MetaException o1)
  // "a=1/b=x" -> {"a": "1", "b": "x"}
  map<string, string> partition_name_to_spec(1: string part_name) throws (1: MetaException o1)

  void markPartitionForEvent(1: string db_name, 2: string tbl_name, 3: map<string, string> part_vals,
      4: PartitionEventType eventType)
      throws (1: MetaException o1, 2: NoSuchObjectException o2, 3: UnknownDBException o3,
              4: UnknownTableException o4, 5: UnknownPartitionException o5,
              6: InvalidPartitionException o6)
  bool isPartitionMarkedForEvent(1: string db_name, 2: string tbl_name,
      3: map<string, string> part_vals, 4: PartitionEventType eventType)
      throws (1: MetaException o1, 2: NoSuchObjectException o2, 3: UnknownDBException o3,
              4: UnknownTableException o4, 5: UnknownPartitionException o5,
              6: InvalidPartitionException o6)

  // --- indexes (Hive 2.3 only; removed in Hive 3) ----------------------------------------

  list<Index> get_indexes(1: string db_name, 2: string tbl_name, 3: i16 max_indexes = -1)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<string> get_index_names(1: string db_name, 2: string tbl_name, 3: i16 max_indexes = -1)
      throws (1: MetaException o2)

  // --- constraints -----------------------------------------------------------------------

  PrimaryKeysResponse get_primary_keys(1: PrimaryKeysRequest request)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  ForeignKeysResponse get_foreign_keys(1: ForeignKeysRequest request)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)

  // --- column statistics -----------------------------------------------------------------

  // Insert or replace the statistics of the columns in stats_obj.
  bool update_table_column_statistics(1: ColumnStatistics stats_obj)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)
  bool update_partition_column_statistics(1: ColumnStatistics stats_obj)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)
  // Hive 4.
  SetPartitionsStatsResponse update_table_column_statistics_req(1: SetPartitionsStatsRequest req)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)
  SetPartitionsStatsResponse update_partition_column_statistics_req(1: SetPartitionsStatsRequest req)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)

  // Note the throws order differs from the update calls (InvalidInput is 3 here).
  ColumnStatistics get_table_column_statistics(1: string db_name, 2: string tbl_name,
      3: string col_name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2, 3: InvalidInputException o3,
              4: InvalidObjectException o4)
  ColumnStatistics get_partition_column_statistics(1: string db_name, 2: string tbl_name,
      3: string part_name, 4: string col_name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2, 3: InvalidInputException o3,
              4: InvalidObjectException o4)
  TableStatsResult get_table_statistics_req(1: TableStatsRequest request)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  PartitionsStatsResult get_partitions_statistics_req(1: PartitionsStatsRequest request)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  // Statistics of the named partitions merged into one object per column.
  AggrStats get_aggr_stats_for(1: PartitionsStatsRequest request)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  // Bulk write of table or partition statistics; needMerge merges into what is stored.
  bool set_aggr_stats_for(1: SetPartitionsStatsRequest request)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: InvalidInputException o4)

  // `engine` (the last argument) is Hive 4; Hive 2.3/3.x clients never send it.
  bool delete_partition_column_statistics(1: string db_name, 2: string tbl_name,
      3: string part_name, 4: string col_name, 5: string engine)
      throws (1: NoSuchObjectException o1, 2: MetaException o2, 3: InvalidObjectException o3,
              4: InvalidInputException o4)
  bool delete_table_column_statistics(1: string db_name, 2: string tbl_name, 3: string col_name,
      4: string engine)
      throws (1: NoSuchObjectException o1, 2: MetaException o2, 3: InvalidObjectException o3,
              4: InvalidInputException o4)
  // Hive 4.1 (HIVE-28655); ids as in apache/hive master after that change.
  bool delete_column_statistics_req(1: DeleteColumnStatisticsRequest req)
      throws (1: NoSuchObjectException o1, 2: MetaException o2, 3: InvalidObjectException o3,
              4: InvalidInputException o4)

  // --- legacy types (Hive 2.3; removed from Hive 4) --------------------------------------

  bool create_type(1: Type type)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3)
  Type get_type(1: string name) throws (1: MetaException o1, 2: NoSuchObjectException o2)
  bool drop_type(1: string type) throws (1: MetaException o1, 2: NoSuchObjectException o2)
  map<string, Type> get_type_all(1: string name) throws (1: MetaException o2)

  // --- functions -----------------------------------------------------------------------

  void create_function(1: Function func)
      throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
              4: NoSuchObjectException o4)
  void drop_function(1: string dbName, 2: string funcName)
      throws (1: NoSuchObjectException o1, 2: MetaException o3)
  void alter_function(1: string dbName, 2: string funcName, 3: Function newFunc)
      throws (1: InvalidOperationException o1, 2: MetaException o2)
  list<string> get_functions(1: string dbName, 2: string pattern) throws (1: MetaException o1)
  Function get_function(1: string dbName, 2: string funcName)
      throws (1: MetaException o1, 2: NoSuchObjectException o2)
  GetAllFunctionsResponse get_all_functions() throws (1: MetaException o1)

  // --- notifications -------------------------------------------------------------------

  CurrentNotificationEventId get_current_notificationEventId()

  // --- issue 10: per-file partial statistics (extension calls; no HMS client uses these names)

  // Stored files of the table (or of the named partitions / paths) with their partials. The
  // caller checks each file's size, mtime and version against its own listing.
  MetastoreGetFilePartialsResult metastore_get_file_partials(1: MetastoreGetFilePartialsRequest req)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  // Store files' partials in one transaction: a file stored with another size, mtime, version or
  // partition is replaced whole (its old partials are dropped); partials of the same version are
  // added to or replaced by key.
  void metastore_put_file_partials(1: MetastorePutFilePartialsRequest req)
      throws (1: NoSuchObjectException o1, 2: InvalidInputException o2, 3: MetaException o3)
  // Forget stored files (deleted from storage, or no longer wanted).
  void metastore_delete_file_partials(1: MetastoreDeleteFilePartialsRequest req)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)

  // --- issue 11: split-filtering indexes (extension calls; no HMS client uses metastore_* names) ---

  // Record a new index in state CREATING; the answer has its directory under the index root.
  MetastoreIndex metastore_create_index(1: MetastoreIndex index)
      throws (1: AlreadyExistsException o1, 2: NoSuchObjectException o2, 3: InvalidObjectException o3,
              4: MetaException o4)
  // Calls naming an index also name its table (authorization is by table); another table's index
  // is NoSuchObjectException.
  MetastoreIndex metastore_get_index(1: string dbName, 2: string tableName, 3: string name)
      throws (1: NoSuchObjectException o1, 2: MetaException o2)
  // Every index (dbName and tableName empty), a database's, or a table's.
  list<MetastoreIndex> metastore_list_indexes(1: string dbName, 2: string tableName)
      throws (1: MetaException o1)
  // Replace the parts with those of a finished build; part files no longer recorded are deleted.
  MetastoreIndex metastore_finish_index_build(1: MetastoreFinishIndexBuild build)
      throws (1: NoSuchObjectException o1, 2: InvalidObjectException o2, 3: MetaException o3)
  // Drop an index with its files; with partitions, only its parts for those partitions.
  void metastore_drop_index(1: string dbName, 2: string tableName, 3: string name, 4: list<string> partitions)
      throws (1: NoSuchObjectException o1, 2: InvalidOperationException o2, 3: MetaException o3)
  MetastoreFilterSplitsResponse metastore_filter_splits(1: MetastoreFilterSplitsRequest request)
      throws (1: NoSuchObjectException o1, 2: InvalidInputException o2, 3: MetaException o3)
}
