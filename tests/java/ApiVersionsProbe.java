// Starts Kafka 4.4.0's own Admin client against a broker and lets its NetworkClient do the
// ApiVersions handshake (v5 first, then the version the broker's error response names). The
// test reads NetworkClient's DEBUG log; the describeCluster that follows needs Metadata.
// Run: java -Dlog4j2.configurationFile=F -cp '<kafka libs>/*' ApiVersionsProbe.java host:port
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;

public class ApiVersionsProbe {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("request.timeout.ms", "10000");
    p.put("default.api.timeout.ms", "20000");
    try (Admin admin = Admin.create(p)) {
      admin.describeCluster().nodes().get();
      System.out.println("describeCluster: ok");
    } catch (Exception e) {
      System.out.println("describeCluster: " + e);
    }
  }
}
