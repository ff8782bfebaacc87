// ssl.principal.mapping.rules as Kafka's SslPrincipalMapperTest exercises them.
#include "security/ssl_principal_mapper.h"

#include <gtest/gtest.h>

namespace tarn::security {
namespace {

std::string map(const std::string& rules, const std::string& dn) {
  auto m = ssl_principal_mapper::parse(rules);
  EXPECT_TRUE(m) << m.error();
  return m ? m->name_for(dn).value_or("<none>") : "<invalid>";
}

TEST(ssl_principal_mapper, default_keeps_the_dn) {
  EXPECT_EQ(map("DEFAULT", "CN=client,OU=eng,O=tarn"), "CN=client,OU=eng,O=tarn");
}

TEST(ssl_principal_mapper, rules_rewrite_case_and_fall_through) {
  const std::string rules =
      "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),"
      "C=(.*?)$/$1@$2/L,RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U,DEFAULT";
  EXPECT_EQ(map(rules, "CN=Duke,OU=ServiceUsers,O=Org,C=US"), "Duke");
  EXPECT_EQ(map(rules, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"), "duke@sme");
  EXPECT_EQ(map(rules, "cn=duke,ou=JavaSoft,dc=Sun,dc=com"), "DUKE@JAVASOFT");
  EXPECT_EQ(map(rules, "OU=Other"), "OU=Other");
  EXPECT_EQ(map("RULE:^CN=(.*)$/$1/", "OU=x"), "<none>") << "no rule applies";
  EXPECT_EQ(map("RULE:^CN=([^,]*)\\/x.*$/$1/", "CN=a/x,OU=b"), "a");
}

TEST(ssl_principal_mapper, invalid_rules_are_refused) {
  for (const char* bad : {"DEFAULT,NOT_A_RULE", "RULE:^CN=(.*)$", "RULE:[/x/"}) {
    auto m = ssl_principal_mapper::parse(bad);
    EXPECT_FALSE(m) << bad;
    if (!m) {
      EXPECT_NE(m.error().find("Invalid rule"), std::string::npos) << m.error();
    }
  }
}

}  // namespace
}  // namespace tarn::security
