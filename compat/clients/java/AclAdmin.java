// ACL and client-quota driver for Apache Kafka's Java AdminClient (kafka-clients, pinned in pom.xml), used by
// tests/integration/security/acl_quota_test.py: createAcls / describeAcls / deleteAcls with filters,
// alterClientQuotas / describeClientQuotas, against Sluice or Apache Kafka 4.4.
//
//   java -cp 'libs/*:acl-classes' AclAdmin
//
// A line protocol on stdin/stdout, so one JVM serves a whole test run: each input line is one JSON command, each
// answered by exactly one JSON line {"id": <the command's id>, "ok": true|false, ...}:
//
//   {"op": "connect", "id": N, "client": C, "props": {client properties}}          opens Admin client C
//   {"op": "create_acls", "id": N, "client": C, "bindings": [B, ...]}             -> "results": [null | [class, msg]]
//   {"op": "describe_acls", "id": N, "client": C, "filter": F}                     -> "bindings": [B, ...] | "error"
//   {"op": "delete_acls", "id": N, "client": C, "filters": [F, ...]}               -> "results": [{"bindings": [B..]}
//                                                                                    | {"error": [class, msg]}]
//   {"op": "alter_quotas", "id": N, "client": C, "entity": {type: name|null}, "ops": [[key, value|null], ...]}
//                                                                                  -> "error": null | [class, msg]
//   {"op": "describe_quotas", "id": N, "client": C, "components": [{"type", "match": name|null, "kind":
//       "exact"|"default"|"specified"}], "strict": bool}                           -> "entries": [{"entity": {..},
//                                                                                    "values": {..}}] | "error"
//   {"op": "close", "id": N}                                                       closes every client, exits 0
//
// B (a binding): {"resource_type": "TOPIC", "name": "t", "pattern": "LITERAL", "principal": "User:alice",
//                 "host": "*", "operation": "WRITE", "permission": "ALLOW"}
// F (a filter):  the same keys, any of them null (= any) and pattern also ANY or MATCH, resource_type/operation/
//                permission also ANY. Every call waits at most 30 s; an exception answers that command only.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.quota.*;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.common.utils.internals.AppInfoParser;

public class AclAdmin {
    static final ObjectMapper M = new ObjectMapper();
    static final long TIMEOUT_S = 30;

    static Throwable root(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null)
            e = e.getCause();
        return e;
    }

    static ArrayNode err(Throwable e) {
        Throwable r = root(e);
        ArrayNode a = M.createArrayNode();
        a.add(r.getClass().getSimpleName());
        a.add(r.getMessage() == null ? "" : r.getMessage());
        return a;
    }

    static String s(JsonNode n, String k) {
        JsonNode v = n.get(k);
        return v == null || v.isNull() ? null : v.asText();
    }

    static AclBinding binding(JsonNode b) {
        return new AclBinding(
            new ResourcePattern(ResourceType.fromString(s(b, "resource_type")), s(b, "name"),
                                PatternType.fromString(s(b, "pattern"))),
            new AccessControlEntry(s(b, "principal"), s(b, "host"), AclOperation.fromString(s(b, "operation")),
                                   AclPermissionType.fromString(s(b, "permission"))));
    }

    static AclBindingFilter filter(JsonNode f) {
        String rt = s(f, "resource_type"), pt = s(f, "pattern"), op = s(f, "operation"), perm = s(f, "permission");
        return new AclBindingFilter(
            new ResourcePatternFilter(rt == null ? ResourceType.ANY : ResourceType.fromString(rt), s(f, "name"),
                                      pt == null ? PatternType.ANY : PatternType.fromString(pt)),
            new AccessControlEntryFilter(s(f, "principal"), s(f, "host"),
                                         op == null ? AclOperation.ANY : AclOperation.fromString(op),
                                         perm == null ? AclPermissionType.ANY : AclPermissionType.fromString(perm)));
    }

    static ObjectNode json(AclBinding b) {
        ObjectNode o = M.createObjectNode();
        o.put("resource_type", b.pattern().resourceType().name());
        o.put("name", b.pattern().name());
        o.put("pattern", b.pattern().patternType().name());
        o.put("principal", b.entry().principal());
        o.put("host", b.entry().host());
        o.put("operation", b.entry().operation().name());
        o.put("permission", b.entry().permissionType().name());
        return o;
    }

    static ArrayNode sorted(Collection<AclBinding> bs) {
        List<ObjectNode> l = new ArrayList<>();
        for (AclBinding b : bs) l.add(json(b));
        l.sort(Comparator.comparing(ObjectNode::toString));
        ArrayNode a = M.createArrayNode();
        l.forEach(a::add);
        return a;
    }

    static ClientQuotaEntity entity(JsonNode e) {
        Map<String, String> m = new HashMap<>();
        e.properties().forEach(kv -> m.put(kv.getKey(), kv.getValue().isNull() ? null : kv.getValue().asText()));
        return new ClientQuotaEntity(m);
    }

    static void run(Map<String, Admin> clients, JsonNode cmd, ObjectNode out) throws Exception {
        String op = s(cmd, "op");
        Admin admin = clients.get(s(cmd, "client"));
        switch (op) {
            case "connect": {
                Properties p = new Properties();
                cmd.get("props").properties().forEach(kv -> p.put(kv.getKey(), kv.getValue().asText()));
                Admin old = clients.put(s(cmd, "client"), Admin.create(p));
                if (old != null) old.close();
                out.put("ok", true);
                return;
            }
            case "create_acls": {
                List<AclBinding> bs = new ArrayList<>();
                for (JsonNode b : cmd.get("bindings")) bs.add(binding(b));
                CreateAclsResult r = admin.createAcls(bs);
                ArrayNode results = out.putArray("results");
                boolean ok = true;
                for (AclBinding b : bs) {
                    try {
                        r.values().get(b).get(TIMEOUT_S, TimeUnit.SECONDS);
                        results.addNull();
                    } catch (ExecutionException e) {
                        results.add(err(e));
                        ok = false;
                    }
                }
                out.put("ok", ok);
                return;
            }
            case "describe_acls": {
                try {
                    out.set("bindings", sorted(admin.describeAcls(filter(cmd.get("filter"))).values()
                                                   .get(TIMEOUT_S, TimeUnit.SECONDS)));
                    out.put("ok", true);
                } catch (ExecutionException e) {
                    out.set("error", err(e));
                    out.put("ok", false);
                }
                return;
            }
            case "delete_acls": {
                List<AclBindingFilter> fs = new ArrayList<>();
                for (JsonNode f : cmd.get("filters")) fs.add(filter(f));
                DeleteAclsResult r = admin.deleteAcls(fs);
                ArrayNode results = out.putArray("results");
                boolean ok = true;
                for (AclBindingFilter f : fs) {
                    ObjectNode one = results.addObject();
                    try {
                        List<AclBinding> gone = new ArrayList<>();
                        for (DeleteAclsResult.FilterResult fr : r.values().get(f).get(TIMEOUT_S, TimeUnit.SECONDS)
                                                                  .values()) {
                            if (fr.exception() != null) one.set("binding_error", err(fr.exception()));
                            else gone.add(fr.binding());
                        }
                        one.set("bindings", sorted(gone));
                    } catch (ExecutionException e) {
                        one.set("error", err(e));
                        ok = false;
                    }
                }
                out.put("ok", ok);
                return;
            }
            case "alter_quotas": {
                List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
                for (JsonNode o : cmd.get("ops"))
                    ops.add(new ClientQuotaAlteration.Op(o.get(0).asText(), o.get(1).isNull() ? null : o.get(1).asDouble()));
                ClientQuotaEntity e = entity(cmd.get("entity"));
                try {
                    admin.alterClientQuotas(List.of(new ClientQuotaAlteration(e, ops))).all()
                         .get(TIMEOUT_S, TimeUnit.SECONDS);
                    out.putNull("error");
                    out.put("ok", true);
                } catch (ExecutionException ex) {
                    out.set("error", err(ex));
                    out.put("ok", false);
                }
                return;
            }
            case "describe_quotas": {
                List<ClientQuotaFilterComponent> cs = new ArrayList<>();
                for (JsonNode c : cmd.get("components")) {
                    String kind = s(c, "kind"), type = s(c, "type");
                    cs.add("default".equals(kind) ? ClientQuotaFilterComponent.ofDefaultEntity(type)
                           : "specified".equals(kind) ? ClientQuotaFilterComponent.ofEntityType(type)
                           : ClientQuotaFilterComponent.ofEntity(type, s(c, "match")));
                }
                ClientQuotaFilter f = cmd.path("strict").asBoolean(false) ? ClientQuotaFilter.containsOnly(cs)
                                                                          : ClientQuotaFilter.contains(cs);
                try {
                    Map<ClientQuotaEntity, Map<String, Double>> m =
                        admin.describeClientQuotas(f).entities().get(TIMEOUT_S, TimeUnit.SECONDS);
                    List<ClientQuotaEntity> keys = new ArrayList<>(m.keySet());
                    keys.sort(Comparator.comparing((ClientQuotaEntity k) -> new TreeMap<>(k.entries()).toString()));
                    ArrayNode entries = out.putArray("entries");
                    for (ClientQuotaEntity k : keys) {
                        ObjectNode one = entries.addObject();
                        ObjectNode ent = one.putObject("entity");
                        k.entries().forEach(ent::put);
                        ObjectNode vals = one.putObject("values");
                        new TreeMap<>(m.get(k)).forEach(vals::put);
                    }
                    out.put("ok", true);
                } catch (ExecutionException ex) {
                    out.set("error", err(ex));
                    out.put("ok", false);
                }
                return;
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, Admin> clients = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        ObjectNode hello = M.createObjectNode();
        hello.put("info", "kafka-clients " + AppInfoParser.getVersion());
        stdout.println(M.writeValueAsString(hello));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode cmd = M.readTree(line);
            ObjectNode out = M.createObjectNode();
            out.set("id", cmd.get("id"));
            long t0 = System.nanoTime();
            if ("close".equals(s(cmd, "op"))) {
                for (Admin a : clients.values()) a.close(java.time.Duration.ofSeconds(5));
                out.put("ok", true);
                stdout.println(M.writeValueAsString(out));
                return;
            }
            try {
                run(clients, cmd, out);
            } catch (Throwable e) {  // one command's crash is that command's answer
                out.put("ok", false);
                out.set("exception", err(e));
            }
            out.put("ms", (System.nanoTime() - t0) / 1000000);
            stdout.println(M.writeValueAsString(out));
        }
    }
}
