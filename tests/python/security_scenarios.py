# Issue 24's security and ACL scenarios, run the same way against tarn and Kafka 4.4.0 (both with
# the StandardAuthorizer, super.users User:ANONYMOUS (the PLAINTEXT listener) and SASL_SSL PLAIN
# users alice and bob), with confluent-kafka 2.x:
#   python security_scenarios.py PLAINTEXT_PORT SASL_SSL_PORT CA OTHER_CA PREFIX SETTLE_SECONDS
# Prints one line per scenario; the C++ test expects the same lines from both brokers.
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)

plain_port, sasl_port, ca, other_ca, prefix = sys.argv[1:6]
settle_seconds = float(sys.argv[6])
admin = AdminClient({'bootstrap.servers': '127.0.0.1:' + plain_port})
orders, secret, other = prefix + 'orders-eu', prefix + 'orders-secret', prefix + 'other'
for f in admin.create_topics([NewTopic(t, 1, 1) for t in [orders, secret, other]]).values():
    f.result(30)


def acl(principal, name, pattern, operation, permission):
    return AclBinding(ResourceType.TOPIC, name, pattern, 'User:' + principal, '*', operation,
                      permission)


bindings = [
    # alice may write every topic whose name starts with PREFIX + 'orders-' ...
    acl('alice', prefix + 'orders-', ResourcePatternType.PREFIXED, AclOperation.WRITE,
        AclPermissionType.ALLOW),
    # ... except orders-secret: DENY beats ALLOW.
    acl('alice', secret, ResourcePatternType.LITERAL, AclOperation.WRITE, AclPermissionType.DENY),
    # bob may read (and so describe) them all, not write.
    acl('bob', prefix, ResourcePatternType.PREFIXED, AclOperation.READ, AclPermissionType.ALLOW),
]
for f in admin.create_acls(bindings).values():
    f.result(30)
# ACLs reach Kafka's authorizer through its metadata log: wait until they are described, then
# SETTLE_SECONDS longer for the broker's authorizer to load the records (tarn's: 0, it answers
# CreateAcls once its authorizer has them).
everything = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)
deadline = time.time() + 30
while len(admin.describe_acls(everything).result(30)) < 3 and time.time() < deadline:
    time.sleep(0.1)
time.sleep(settle_seconds)


def produce(name, user, password, topic, ca_file=ca):
    errors = []
    conf = {'bootstrap.servers': '127.0.0.1:' + sasl_port, 'security.protocol': 'SASL_SSL',
            'ssl.ca.location': ca_file, 'sasl.mechanisms': 'PLAIN', 'sasl.username': user,
            'sasl.password': password, 'message.timeout.ms': 10000,
            'error_cb': lambda e: errors.append(e)}
    p = Producer(conf)
    result = []
    p.produce(topic, b'x', callback=lambda err, msg: result.append(err))
    deadline = time.time() + 15
    while not result and time.time() < deadline:
        p.poll(0.1)
        fatal = [e for e in errors if e.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL)]
        if fatal:
            e = fatal[0]
            detail = ''
            if 'Invalid username or password' in e.str():
                detail = ' invalid-username-or-password'
            if 'certificate verify failed' in e.str():
                detail = ' certificate-verify-failed'
            print(name, 'client-error', e.name() + detail, flush=True)
            return
    if not result:
        print(name, 'no-answer', [e.str() for e in errors], flush=True)
    elif result[0] is None:
        print(name, 'appended', flush=True)
    else:
        print(name, 'error', result[0].name(), flush=True)


produce('prefix-allow', 'alice', 'alice-secret', orders)
produce('deny-beats-allow', 'alice', 'alice-secret', secret)
produce('outside-the-prefix', 'alice', 'alice-secret', other)
produce('without-write', 'bob', 'bob-secret', orders)
produce('wrong-password', 'alice', 'wrong', orders)
produce('untrusted-certificate', 'alice', 'alice-secret', orders, other_ca)

# What the topics hold, read by the super user over PLAINTEXT.
c = Consumer({'bootstrap.servers': '127.0.0.1:' + plain_port, 'group.id': prefix + 'check'})
for t in [orders, secret, other]:
    low, high = c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)
    print('records', t[len(prefix):], high - low, flush=True)
c.close()
