// Test oracle: prints the real Java Murmur3 hashes for the inputs in a file, one result line per input line.
// Input lines: "B <hex bytes>" (may be "B " for empty) or "L <signed decimal long>".
// Output lines: for B, "<hive hash64(byte[])> <orc hash64(byte[])>"; for L, "<hive hash64(long)>".
import java.io.BufferedReader;
import java.io.FileReader;
import java.io.PrintWriter;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;

public class Murmur3Oracle {
  private static byte[] unhex(String s) {
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
    try (BufferedReader in = new BufferedReader(new FileReader(args[0]))) {
      String line;
      while ((line = in.readLine()) != null) {
        String arg = line.length() > 2 ? line.substring(2) : "";
        if (line.charAt(0) == 'B') {
          byte[] data = unhex(arg);
          out.println(org.apache.hive.common.util.Murmur3.hash64(data) + " "
              + org.apache.orc.util.Murmur3.hash64(data));
        } else {
          out.println(org.apache.hive.common.util.Murmur3.hash64(Long.parseLong(arg)));
        }
      }
    }
    out.flush();
  }
}
