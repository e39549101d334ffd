package dev.kbd.stack;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

/**
 * The local broker's stand-in for how Google's Managed Service for Apache Kafka checks an OAUTHBEARER token
 * (a test fixture of kafka-bigquery-drain, not Google's code; Google does not publish its server side).
 * What it checks is what Google's reference clients (googleapis/managedkafka) put in the token:
 *
 * <ul>
 *   <li>the shape: three base64url parts; a header of exactly {"typ":"JWT","alg":"GOOG_OAUTH2_TOKEN"};
 *   <li>the claims: sub an email; exp and iat whole seconds, exp in the future, iat not in it; iss, when
 *       present, "Google" and scope, when present, "kafka" (the Java client sends scope and no iss, the
 *       Python one iss and no scope: a server that takes both clients cannot require either);
 *   <li>the access token: asked of the token-info endpoint that issued it (Google's tokeninfo; locally the
 *       test's metadata server), which must know it, not call it expired, and name the same email as sub;
 *   <li>the principal: one of {@code allowedPrincipals} (what the IAM role roles/managedkafka.client
 *       decides on Google Cloud).
 * </ul>
 *
 * A refusal throws SaslAuthenticationException, whose message Kafka sends to the client. The token's exp is
 * its lifetime: with connections.max.reauth.ms set, the broker ends a session that is not re-authenticated
 * before it, as Managed Kafka does when an access token expires.
 *
 * <p>JAAS options: {@code tokenInfoUrl}, {@code allowedPrincipals} (comma separated).
 */
public final class GoogleTokenValidator implements AuthenticateCallbackHandler {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, String> HEADER = Map.of("typ", "JWT", "alg", "GOOG_OAUTH2_TOKEN");
  private static final long CLOCK_SKEW_SECONDS = 60;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private String tokenInfoUrl;
  private Set<String> allowedPrincipals;

  @Override
  public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
    if (!"OAUTHBEARER".equals(mechanism)) throw new IllegalArgumentException("not OAUTHBEARER: " + mechanism);
    Map<String, ?> options = entries.get(0).getOptions();
    tokenInfoUrl = String.valueOf(options.get("tokenInfoUrl"));
    allowedPrincipals =
        Arrays.stream(String.valueOf(options.get("allowedPrincipals")).split(","))
            .map(String::trim)
            .filter(s -> !s.isEmpty())
            .collect(Collectors.toSet());
  }

  @Override
  public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
    for (Callback callback : callbacks) {
      if (!(callback instanceof OAuthBearerValidatorCallback validation)) {
        throw new UnsupportedCallbackException(callback);
      }
      validation.token(validate(validation.tokenValue()));
    }
  }

  private OAuthBearerToken validate(String value) {
    String[] parts = value.split("\\.", -1);
    if (parts.length != 3) refuse("malformed token: " + parts.length + " parts, not 3");
    JsonNode header = json(decode(parts[0], "header"), "header");
    if (header.size() != 2
        || !HEADER.get("typ").equals(header.path("typ").asText())
        || !HEADER.get("alg").equals(header.path("alg").asText())) {
      refuse("malformed token: the header is not {\"typ\":\"JWT\",\"alg\":\"GOOG_OAUTH2_TOKEN\"}");
    }
    JsonNode claims = json(decode(parts[1], "claims"), "claims");
    String subject = claims.path("sub").asText("");
    if (!subject.matches("[^@\\s]+@[^@\\s]+")) refuse("malformed token: sub is not a principal email");
    if (!claims.path("exp").isIntegralNumber() || !claims.path("iat").isIntegralNumber()) {
      refuse("malformed token: exp and iat must be whole seconds");
    }
    if (claims.has("iss") && !"Google".equals(claims.path("iss").asText())) {
      refuse("malformed token: iss is not Google");
    }
    if (claims.has("scope") && !"kafka".equals(claims.path("scope").asText())) {
      refuse("malformed token: scope is not kafka");
    }
    long exp = claims.path("exp").asLong();
    long iat = claims.path("iat").asLong();
    long now = Instant.now().getEpochSecond();
    if (exp <= now) refuse("expired token: exp " + Instant.ofEpochSecond(exp) + " is past");
    if (iat > now + CLOCK_SKEW_SECONDS) refuse("malformed token: iat " + Instant.ofEpochSecond(iat) + " is in the future");
    String accessToken = decode(parts[2], "access token");
    JsonNode info = tokenInfo(accessToken);
    if (!subject.equals(info.path("email").asText())) {
      refuse("the access token belongs to " + info.path("email").asText("nobody") + ", not to sub " + subject);
    }
    if (!allowedPrincipals.contains(subject)) {
      refuse("principal " + subject + " may not use this cluster (it needs roles/managedkafka.client)");
    }
    return new Token(value, subject, exp * 1000, iat * 1000);
  }

  private JsonNode tokenInfo(String accessToken) {
    HttpResponse<String> response;
    try {
      response =
          http.send(
              HttpRequest.newBuilder(
                      URI.create(tokenInfoUrl + "?access_token=" + URLEncoder.encode(accessToken, StandardCharsets.UTF_8)))
                  .timeout(Duration.ofSeconds(5))
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofString());
    } catch (IOException | InterruptedException e) {
      throw new SaslAuthenticationException("the token could not be checked: " + e.getMessage());
    }
    JsonNode info = json(response.body(), "token info");
    if (response.statusCode() != 200) {
      refuse("the access token was refused by its issuer: " + info.path("error_description").asText(info.path("error").asText("HTTP " + response.statusCode())));
    }
    if (info.path("expires_in").asLong(0) <= 0) refuse("expired token: its issuer says the access token expired");
    return info;
  }

  private static String decode(String part, String what) {
    try {
      return new String(Base64.getUrlDecoder().decode(part), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new SaslAuthenticationException("OAUTHBEARER token refused: malformed token: the " + what + " is not base64url");
    }
  }

  private static JsonNode json(String text, String what) {
    try {
      JsonNode node = JSON.readTree(text);
      if (node == null || !node.isObject()) throw new IOException("not an object");
      return node;
    } catch (IOException e) {
      throw new SaslAuthenticationException("OAUTHBEARER token refused: malformed token: the " + what + " is not a JSON object");
    }
  }

  private static void refuse(String why) {
    throw new SaslAuthenticationException("OAUTHBEARER token refused: " + why);
  }

  @Override
  public void close() {}

  private record Token(String value, String principalName, long lifetimeMs, Long startTimeMs)
      implements OAuthBearerToken {
    @Override
    public Set<String> scope() {
      return Set.of("kafka");
    }
  }
}
