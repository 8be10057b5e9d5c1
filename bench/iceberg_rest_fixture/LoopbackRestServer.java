// Apache Iceberg's reference REST catalog (RESTCatalogAdapter and RESTCatalogServlet, what the
// iceberg-rest-fixture image serves) over a JDBC catalog, on 127.0.0.1 only: the fixture's own main
// binds every interface. Settings come from the environment: CATALOG_<KEY> is catalog property <key>
// ("__" a '-', "_" a '.'), REST_PORT the port. bench/iceberg_repos_bench.py compiles and runs it.
import jakarta.servlet.http.HttpServlet;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class LoopbackRestServer {
  public static void main(String[] args) throws Exception {
    Map<String, String> props = new HashMap<>();
    for (Map.Entry<String, String> e : System.getenv().entrySet()) {
      if (!e.getKey().startsWith("CATALOG_")) continue;
      String key = e.getKey().substring(8).replace("__", "-").replace("_", ".").toLowerCase(Locale.ROOT);
      props.put(key, e.getValue());
    }
    Catalog catalog = CatalogUtil.buildIcebergCatalog("bench", props, new Configuration());
    HttpServlet servlet = new RESTCatalogServlet(new RESTCatalogAdapter(catalog));
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(servlet), "/*");
    Server server = new Server(new InetSocketAddress("127.0.0.1", Integer.parseInt(System.getenv("REST_PORT"))));
    server.setHandler(context);
    server.start();
    System.out.println("listening on 127.0.0.1:" + System.getenv("REST_PORT"));
    server.join();
  }
}
