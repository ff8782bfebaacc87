# confluent-kafka 2.x (librdkafka) over tarn's SASL_SSL listener with SCRAM-SHA-256 and OAUTHBEARER
# (a signed JWT handed over by oauth_cb), one line per case:
#   python security_confluent.py CERT_DIR SASL_SSL_PORT
# CERT_DIR holds ca.pem and the signed JWTs token.jwt and expired.jwt. A round trip produces three
# records to partition 0 of a topic named after the case and reads them back ("NAME ok [...]"); a
# refused case prints "NAME refused CODE" with librdkafka's error code.
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

cert_dir, sasl_port = sys.argv[1:3]


def oauth(path):
    jwt = open(path).read().strip()
    return lambda _config: (jwt, time.time() + 3600)


def case(name, expect, **conf):
    conf = dict(conf, **{'bootstrap.servers': '127.0.0.1:' + sasl_port,
                         'security.protocol': 'SASL_SSL', 'ssl.ca.location': cert_dir + '/ca.pem'})
    errors = []
    conf['error_cb'] = lambda e: errors.append(e)
    try:
        # A refused login fails every message at its timeout: short for the refused cases.
        timeout_ms = 3000 if expect == 'refused' else 8000
        p = Producer(dict(conf, **{'message.timeout.ms': timeout_ms}))
        delivered = []
        for v in [b'one', b'two', b'three']:
            p.produce(name, v, partition=0, on_delivery=lambda e, m: delivered.append(e))
        p.flush(10)
        if len(delivered) != 3 or any(delivered):
            raise KafkaException(errors[0] if errors else delivered[0])
        c = Consumer(dict(conf, **{'group.id': name, 'enable.auto.commit': False}))
        c.assign([TopicPartition(name, 0, 0)])
        got = []
        deadline = time.time() + 10
        while len(got) < 3 and time.time() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value().decode())
        c.close()
        print(name, 'ok', got, flush=True)
    except KafkaException as e:
        err = e.args[0]
        code = err.name() if hasattr(err, 'name') else str(err)
        print(name, 'refused' if expect == 'refused' else 'error', code, flush=True)


case('confluent-scram-sha-256', 'ok', **{'sasl.mechanism': 'SCRAM-SHA-256',
                                          'sasl.username': 'alice', 'sasl.password': 'alice-scram'})
case('confluent-oauthbearer', 'ok', **{'sasl.mechanism': 'OAUTHBEARER',
                                        'oauth_cb': oauth(cert_dir + '/token.jwt')})
case('confluent-expired-token', 'refused', **{'sasl.mechanism': 'OAUTHBEARER',
                                               'oauth_cb': oauth(cert_dir + '/expired.jwt')})
