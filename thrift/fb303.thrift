// Base service of the Hive Metastore: Facebook's fb303 status/counters interface.
//
// ThriftHiveMetastore extends FacebookService, so these method names exist on every
// metastore connection. Clients rarely call them; the JVM metastore client never does
// on its normal paths, but monitoring tools may. Wire layout (names, argument ids and
// types) follows the fb303.thrift that ships with Apache Thrift's contrib tree and
// libfb303-0.9.3, which Hive 2.3 links against.

namespace py metastore.api.fb303
namespace java com.facebook.fb303

// Service health as reported by getStatus().
enum fb_status {
  DEAD = 0,
  STARTING = 1,
  ALIVE = 2,
  STOPPING = 3,
  STOPPED = 4,
  WARNING = 5,
}

service FacebookService {
  // Descriptive name and version of the service.
  string getName(),
  string getVersion(),

  fb_status getStatus(),
  // Human readable explanation of the status.
  string getStatusDetails(),

  // Named i64 counters, all at once or one by one.
  map<string, i64> getCounters(),
  i64 getCounter(1: string key),

  // Runtime options.
  void setOption(1: string key, 2: string value),
  string getOption(1: string key),
  map<string, string> getOptions(),

  // A CPU profile gathered over the given number of seconds (may be empty).
  string getCpuProfile(1: i32 profileDurationInSec),

  // Unix time (seconds) at which the server started.
  i64 aliveSince(),

  // Fire-and-forget: no reply message is sent for these.
  oneway void reinitialize(),
  oneway void shutdown(),
}
