// Load generator for bench/bench_hms.py with JVM clients: the generated Hive 2.3.10 ThriftHiveMetastore.Client
// over TSocket + TBinaryProtocol, the stack Spark's built-in Hive client uses, from pyspark's jars.
//
// bench_hms.py compiles this file at run time (nothing built is committed) and drives it over stdin/stdout:
//
//   java -cp <out>:<pyspark jars>/* HmsLoad HOST PORT CALL CLIENTS FIRST WARMUP_S SECONDS COLUMNS PARTITIONS DB TABLE
//
// CLIENTS threads, numbered from FIRST (the number picks the column an update writes); bench_hms.py runs one
// such process per client.
//   <- READY                 every client connected and warmed up (JIT compiled, server caches filled)
//   -> GO
//   <- DONE                  every client finished its timed loop (CPU is read here, before the report)
//   -> REPORT
//   <- RESULT <ops> <errors> <elapsed ns>
//   <- LAT <latency µs> <latency µs> ...
//
// Every client decodes every reply in full into the generated Java objects, as Spark and Trino do.
//
// Session mode (bench_security.py), CALL = "session": the connections stay open across many timed runs, so the
// JVM's JIT and the connections' handshakes are paid once, as in a long-lived Spark driver:
//   java ... HmsLoad HOST PORT session CLIENTS FIRST 0 0 COLUMNS PARTITIONS DB TABLE
//   <- OPEN                  every client connected (TLS and SASL handshakes done)
//   -> RUN <call> <warm-up s> <seconds>
//   <- READY / -> GO / <- DONE / -> REPORT / <- RESULT, LAT     as above, then the next RUN
//   -> EXIT
// RUN takes an optional fifth word, the number of partitions (the table's first N) the call names
// (bench_scale.py). CALL "floor:<call>" times the client-decoding floor of <call>: its reply bytes are recorded
// once from the server, then the same generated client decodes them from memory on every call (floorOp).
// A warm-up of 0 s makes no call before the timed loop (slow writes).
//
// Secured ports (bench/bench_security.py), by system properties, with the classes Hive's client uses:
//   -Dhms.truststore=FILE.jks -Dhms.truststore.password=PW     TLS (TSSLTransportFactory, as hive.metastore.use.SSL)
//   -Dhms.sasl.service=metastore -Dhms.sasl.host=HOST          SASL GSSAPI (TSaslClientTransport, QOP auth, as
//                                                              hive.metastore.sasl.enabled); the ticket comes from
//                                                              the cache (-Djavax.security.auth.useSubjectCredsOnly=false)

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsData;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsDesc;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.api.LongColumnStatsData;
import org.apache.hadoop.hive.metastore.api.PartitionsStatsRequest;
import org.apache.hadoop.hive.metastore.api.SetPartitionsStatsRequest;
import org.apache.hadoop.hive.metastore.api.TableStatsRequest;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.TException;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TIOStreamTransport;
import org.apache.thrift.transport.TSSLTransportFactory;
import org.apache.thrift.transport.TSaslClientTransport;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;

import javax.security.sasl.Sasl;

public final class HmsLoad {
    static final long LAST_ANALYZED = 1_700_000_000L;
    static final int MAX_OPS_PER_CLIENT = 1_000_000;

    interface Op {
        void call(ThriftHiveMetastore.Client c) throws TException;
    }

    static Op opFor(String call, String db, String table, List<String> cols, List<String> parts, int worker) {
        switch (call) {
            case "get_table_column_statistics": {
                String col = cols.get(worker % cols.size());
                return c -> c.get_table_column_statistics(db, table, col);
            }
            case "update_table_column_statistics": {
                String col = cols.get(worker % cols.size());
                int i = worker % cols.size();
                long[] salt = {0};
                return c -> {
                    long s = salt[0]++;
                    LongColumnStatsData d = new LongColumnStatsData(i % 7, 100 + i);
                    d.setLowValue(-i - s);
                    d.setHighValue(1000L * (i + 1) + s);
                    ColumnStatisticsDesc desc = new ColumnStatisticsDesc(true, db, table);
                    desc.setLastAnalyzed(LAST_ANALYZED);
                    List<ColumnStatisticsObj> objs = new ArrayList<>();
                    objs.add(new ColumnStatisticsObj(col, "bigint", ColumnStatisticsData.longStats(d)));
                    c.update_table_column_statistics(new ColumnStatistics(desc, objs));
                };
            }
            case "get_table_statistics_req": {
                TableStatsRequest req = new TableStatsRequest(db, table, cols);
                return c -> c.get_table_statistics_req(req);
            }
            case "get_partitions_statistics_req": {
                PartitionsStatsRequest req = new PartitionsStatsRequest(db, table, cols, parts);
                return c -> c.get_partitions_statistics_req(req);
            }
            case "get_table": {
                return c -> c.get_table(db, table);
            }
            case "get_aggr_stats_for": {
                PartitionsStatsRequest req = new PartitionsStatsRequest(db, table, cols, parts);
                return c -> c.get_aggr_stats_for(req);
            }
            case "get_partition_names": {
                return c -> c.get_partition_names(db, table, (short) -1);
            }
            case "get_partitions_by_filter": {
                // Every partition of the table (names ds=p...), through the filter path.
                return c -> c.get_partitions_by_filter(db, table, "ds >= \"p\"", (short) -1);
            }
            case "update_partition_column_statistics": {
                // One partition's statistics for every column a call, cycling over PARTITIONS partitions.
                long[] salt = {0};
                return c -> {
                    long s = salt[0]++;
                    c.update_partition_column_statistics(partitionStats(db, table, cols, parts.get((int) (s % parts.size())), s));
                };
            }
            case "set_aggr_stats_for": {
                // Every one of PARTITIONS partitions' statistics for every column in one call (needMerge false).
                long[] salt = {0};
                return c -> {
                    long s = salt[0]++;
                    List<ColumnStatistics> batch = new ArrayList<>(parts.size());
                    for (String p : parts) batch.add(partitionStats(db, table, cols, p, s));
                    SetPartitionsStatsRequest req = new SetPartitionsStatsRequest(batch);
                    req.setNeedMerge(false);
                    c.set_aggr_stats_for(req);
                };
            }
            default:
                throw new IllegalArgumentException("unknown call " + call);
        }
    }

    static ColumnStatistics partitionStats(String db, String table, List<String> cols, String part, long s) {
        ColumnStatisticsDesc desc = new ColumnStatisticsDesc(false, db, table);
        desc.setPartName(part);
        desc.setLastAnalyzed(LAST_ANALYZED);
        List<ColumnStatisticsObj> objs = new ArrayList<>(cols.size());
        for (int i = 0; i < cols.size(); i++) {
            LongColumnStatsData d = new LongColumnStatsData(i % 7, 100 + i);
            d.setLowValue(-i - s);
            d.setHighValue(1000L * (i + 1) + s);
            objs.add(new ColumnStatisticsObj(cols.get(i), "bigint", ColumnStatisticsData.longStats(d)));
        }
        return new ColumnStatistics(desc, objs);
    }

    /** An InputStream that keeps a copy of every byte read through it. */
    static final class TeeInputStream extends java.io.FilterInputStream {
        final java.io.ByteArrayOutputStream copy = new java.io.ByteArrayOutputStream();

        TeeInputStream(java.io.InputStream in) {
            super(in);
        }

        @Override
        public int read() throws java.io.IOException {
            int b = super.read();
            if (b >= 0) copy.write(b);
            return b;
        }

        @Override
        public int read(byte[] buf, int off, int len) throws java.io.IOException {
            int n = super.read(buf, off, len);
            if (n > 0) copy.write(buf, off, n);
            return n;
        }
    }

    /**
     * The client-decoding floor of a call: its reply bytes are recorded once from the server (a fresh connection,
     * one call), then every call of the timed loop is the same generated client on a transport that serves those
     * bytes from memory (the request is written to nowhere). The transport is TIOStreamTransport over a
     * BufferedInputStream, as TSocket reads a socket, so the decoding path is the one a socket client takes.
     */
    static Op floorOp(String host, int port, String call, String db, String table, List<String> cols,
                      List<String> parts) throws Exception {
        Op real = opFor(call, db, table, cols, parts, 0);
        java.net.Socket sock = new java.net.Socket(host, port);
        sock.setSoTimeout(600_000);
        TeeInputStream tee = new TeeInputStream(new java.io.BufferedInputStream(sock.getInputStream()));
        TTransport recording = new TIOStreamTransport(tee, new java.io.BufferedOutputStream(sock.getOutputStream()));
        real.call(new ThriftHiveMetastore.Client(new TBinaryProtocol(recording))); // a fresh client: sequence id 1
        sock.close();
        byte[] reply = tee.copy.toByteArray();
        System.err.println("floor: recorded " + reply.length + " reply bytes of " + call);
        return c -> {
            TTransport mem = new TIOStreamTransport(
                    new java.io.BufferedInputStream(new java.io.ByteArrayInputStream(reply)),
                    java.io.OutputStream.nullOutputStream());
            real.call(new ThriftHiveMetastore.Client(new TBinaryProtocol(mem))); // sequence id 1 again
        };
    }

    static final class Worker extends Thread {
        final TTransport socket;
        final ThriftHiveMetastore.Client client;
        final Op op;
        final long warmupNs;
        final long runNs;
        final CountDownLatch warmed;
        final CountDownLatch go;
        final long[] latenciesNs = new long[MAX_OPS_PER_CLIENT];
        int ops;
        int errors;
        long endNs;
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        final boolean closeAfter;

        Worker(String host, int port, Op op, long warmupNs, long runNs, CountDownLatch warmed, CountDownLatch go)
                throws TTransportException, javax.security.sasl.SaslException {
            this(open(host, port), op, warmupNs, runNs, warmed, go, true);
        }

        Worker(TTransport socket, Op op, long warmupNs, long runNs, CountDownLatch warmed, CountDownLatch go,
               boolean closeAfter) {
            this.socket = socket;
            this.client = new ThriftHiveMetastore.Client(new TBinaryProtocol(socket));
            this.closeAfter = closeAfter;
            this.op = op;
            this.warmupNs = warmupNs;
            this.runNs = runNs;
            this.warmed = warmed;
            this.go = go;
            setDaemon(true);
        }

        @Override
        public void run() {
            try {
                long warmEnd = System.nanoTime() + warmupNs;
                while (warmupNs > 0) { // no warm-up at all when it is 0 (slow writes)
                    op.call(client); // a failure here ends the run: the set-up is wrong
                    if (System.nanoTime() >= warmEnd) break;
                }
                warmed.countDown();
                go.await();
                long deadline = System.nanoTime() + runNs;
                while (ops < MAX_OPS_PER_CLIENT) {
                    long t0 = System.nanoTime();
                    if (t0 >= deadline) break;
                    try {
                        op.call(client);
                    } catch (TException e) {
                        errors++;
                        if (!socket.isOpen()) {
                            latenciesNs[ops++] = System.nanoTime() - t0;
                            break;
                        }
                    }
                    latenciesNs[ops++] = System.nanoTime() - t0;
                }
                endNs = System.nanoTime();
            } catch (Throwable t) {
                failure.set(t);
                warmed.countDown();
            } finally {
                if (closeAfter) socket.close();
            }
        }
    }

    /** A connection as Hive's client opens it: plain TSocket, TLS, and SASL GSSAPI over either. */
    static TTransport open(String host, int port) throws TTransportException, javax.security.sasl.SaslException {
        TSocket socket;
        String trustStore = System.getProperty("hms.truststore");
        if (trustStore != null) {
            TSSLTransportFactory.TSSLTransportParameters params = new TSSLTransportFactory.TSSLTransportParameters();
            params.setTrustStore(trustStore, System.getProperty("hms.truststore.password"));
            socket = TSSLTransportFactory.getClientSocket(host, port, 120_000, params);
            // Java starts the handshake at the first read or write; do it now, so a connection opened and left idle
            // (session mode) is not closed by the server's handshake time limit.
            try {
                ((javax.net.ssl.SSLSocket) socket.getSocket()).startHandshake();
            } catch (java.io.IOException e) {
                throw new TTransportException(e);
            }
        } else {
            socket = new TSocket(host, port, 120_000);
            socket.open();
        }
        String service = System.getProperty("hms.sasl.service");
        if (service == null) return socket;
        Map<String, String> props = new HashMap<>();
        props.put(Sasl.QOP, "auth");
        props.put(Sasl.SERVER_AUTH, "true");
        TSaslClientTransport sasl = new TSaslClientTransport(
                "GSSAPI", null, service, System.getProperty("hms.sasl.host"), props, null, socket);
        sasl.open();
        return sasl;
    }

    /** Start the workers, wait for their warm-up, then READY / GO / DONE / REPORT on stdin and stdout. */
    static void timedRun(List<Worker> workers, CountDownLatch warmed, CountDownLatch go, BufferedReader in)
            throws Exception {
        for (Worker w : workers) w.start();
        warmed.await();
        for (Worker w : workers) {
            Throwable t = w.failure.get();
            if (t != null) {
                System.err.println("warm-up failed: " + t);
                System.exit(1);
            }
        }
        System.out.println("READY");
        System.out.flush();
        if (!"GO".equals(in.readLine())) System.exit(1);
        long start = System.nanoTime();
        go.countDown();
        for (Worker w : workers) w.join();
        for (Worker w : workers) {
            Throwable t = w.failure.get();
            if (t != null) {
                System.err.println("client failed: " + t);
                System.exit(1);
            }
        }
        long end = start;
        int ops = 0;
        int errors = 0;
        for (Worker w : workers) {
            end = Math.max(end, w.endNs);
            ops += w.ops;
            errors += w.errors;
        }
        System.out.println("DONE");
        System.out.flush();
        if (!"REPORT".equals(in.readLine())) System.exit(1);
        StringBuilder sb = new StringBuilder();
        sb.append("RESULT ").append(ops).append(' ').append(errors).append(' ').append(end - start).append('\n');
        sb.append("LAT");
        for (Worker w : workers) {
            for (int i = 0; i < w.ops; i++) sb.append(' ').append(w.latenciesNs[i] / 1000);
        }
        System.out.println(sb);
        System.out.flush();
    }

    /** Session mode: connections opened once, then timed runs of any call on them until EXIT. */
    static void session(String host, int port, int clients, int first, String db, String table, List<String> cols,
                        List<String> parts) throws Exception {
        List<TTransport> conns = new ArrayList<>();
        for (int w = 0; w < clients; w++) conns.add(open(host, port));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("OPEN");
        System.out.flush();
        for (String line = in.readLine(); line != null && !line.equals("EXIT"); line = in.readLine()) {
            String[] cmd = line.split(" ");
            if ((cmd.length != 4 && cmd.length != 5) || !cmd[0].equals("RUN")) {
                System.err.println("expected RUN <call> <warm-up s> <seconds> [<partitions>] or EXIT, got " + line);
                System.exit(2);
            }
            long warmupNs = (long) (Double.parseDouble(cmd[2]) * 1e9);
            long runNs = (long) (Double.parseDouble(cmd[3]) * 1e9);
            // RUN's own partition count: the first N partitions of the table (default PARTITIONS).
            List<String> runParts = cmd.length == 5 ? partNames(Integer.parseInt(cmd[4])) : parts;
            CountDownLatch warmed = new CountDownLatch(clients);
            CountDownLatch go = new CountDownLatch(1);
            List<Worker> workers = new ArrayList<>();
            for (int w = 0; w < clients; w++) {
                // "floor:<call>": the same client decoding the same reply bytes, served from memory.
                Op op = cmd[1].startsWith("floor:")
                        ? floorOp(host, port, cmd[1].substring(6), db, table, cols, runParts)
                        : opFor(cmd[1], db, table, cols, runParts, first + w);
                workers.add(new Worker(conns.get(w), op, warmupNs, runNs, warmed, go, false));
            }
            timedRun(workers, warmed, go, in);
        }
        for (TTransport c : conns) c.close();
    }

    /** The first n partition names of the table, as bench_hms.Shape names them. */
    static List<String> partNames(int n) {
        List<String> parts = new ArrayList<>(n);
        for (int i = 0; i < n; i++) parts.add(String.format("ds=p%04d", i));
        return parts;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 11) {
            System.err.println(
                    "usage: HmsLoad HOST PORT CALL CLIENTS FIRST WARMUP_S SECONDS COLUMNS PARTITIONS DB TABLE");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String call = args[2];
        int clients = Integer.parseInt(args[3]);
        int first = Integer.parseInt(args[4]);
        long warmupNs = (long) (Double.parseDouble(args[5]) * 1e9);
        long runNs = (long) (Double.parseDouble(args[6]) * 1e9);
        int columns = Integer.parseInt(args[7]);
        int partitions = Integer.parseInt(args[8]);
        String db = args[9];
        String table = args[10];

        // The same names as bench_hms.Shape.
        List<String> cols = new ArrayList<>();
        for (int i = 0; i < columns; i++) cols.add(String.format("c%02d", i));
        List<String> parts = partNames(partitions);

        if (call.equals("session")) {
            session(host, port, clients, first, db, table, cols, parts);
            return;
        }
        CountDownLatch warmed = new CountDownLatch(clients);
        CountDownLatch go = new CountDownLatch(1);
        List<Worker> workers = new ArrayList<>();
        for (int w = 0; w < clients; w++) {
            workers.add(new Worker(host, port, opFor(call, db, table, cols, parts, first + w), warmupNs, runNs, warmed, go));
        }
        timedRun(workers, warmed, go, new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
    }
}
