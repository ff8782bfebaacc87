# kafka-python (Debian's python3-kafka 2.0.2) over tarn's secured listeners, one line per case:
#   python3 security_kafka_python.py CERT_DIR SSL_PORT MTLS_PORT SASL_SSL_PORT
# CERT_DIR holds ca.pem, ca2.pem (another CA), client.pem, client.key and the signed JWTs
# token.jwt and expired.jwt (OAUTHBEARER). A round trip sends three
# records to partition 0 of a topic named after the case and reads them back ("NAME ok [...]");
# a refused case prints "NAME refused EXCEPTION" plus "while-authenticating" when kafka-python
# logged the connection dropped in its <authenticating> state: kafka-python 2.0.2 speaks
# SaslHandshake v0 and raw tokens, where a broker (Kafka or tarn) answers a failed login by closing
# the connection, so that drop is the client's authentication error.
import logging
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.oauth.abstract import AbstractTokenProvider

cert_dir, ssl_port, mtls_port, sasl_port = sys.argv[1:5]


class remember(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


log = remember()
logging.getLogger('kafka').addHandler(log)
logging.getLogger('kafka').setLevel(logging.ERROR)
logging.getLogger('kafka').propagate = False


class token_file(AbstractTokenProvider):
    """OAUTHBEARER's token: a signed JWT the test wrote (its JWKS is the broker's)."""

    def __init__(self, path):
        super().__init__()
        self.jwt = open(path).read().strip()

    def token(self):
        return self.jwt


def case(name, expect, port, **conf):
    conf = dict(conf, bootstrap_servers='127.0.0.1:' + port, ssl_cafile=cert_dir + '/ca.pem',
                api_version_auto_timeout_ms=5000, request_timeout_ms=8000)
    if 'ca' in conf:
        conf['ssl_cafile'] = cert_dir + '/' + conf.pop('ca')
    log.messages.clear()
    try:
        p = KafkaProducer(max_block_ms=8000, **conf)
        for v in [b'one', b'two', b'three']:
            p.send(name, v, partition=0).get(timeout=10)
        p.close(timeout=5)
        c = KafkaConsumer(enable_auto_commit=False, **conf)
        tp = TopicPartition(name, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        got = []
        deadline = time.time() + 10
        while len(got) < 3 and time.time() < deadline:
            for records in c.poll(timeout_ms=200).values():
                got += [r.value.decode() for r in records]
        c.close()
        print(name, 'ok', got, flush=True)
    except Exception as e:
        authenticating = any('<authenticating>' in m for m in log.messages)
        print(name, 'refused' if expect == 'refused' else 'error', type(e).__name__,
              'while-authenticating' if authenticating else '', e, flush=True)


sasl = dict(security_protocol='SASL_SSL', sasl_plain_username='alice')
case('kafka-python-ssl', 'ok', ssl_port, security_protocol='SSL')
case('kafka-python-mtls', 'ok', mtls_port, security_protocol='SSL',
     ssl_certfile=cert_dir + '/client.pem', ssl_keyfile=cert_dir + '/client.key')
case('kafka-python-plain', 'ok', sasl_port, sasl_mechanism='PLAIN',
     sasl_plain_password='alice-secret', **sasl)
case('kafka-python-scram-sha-256', 'ok', sasl_port, sasl_mechanism='SCRAM-SHA-256',
     sasl_plain_password='alice-scram', **sasl)
case('kafka-python-scram-sha-512', 'ok', sasl_port, sasl_mechanism='SCRAM-SHA-512',
     sasl_plain_password='alice-scram', **sasl)
case('kafka-python-oauthbearer', 'ok', sasl_port, security_protocol='SASL_SSL',
     sasl_mechanism='OAUTHBEARER', sasl_oauth_token_provider=token_file(cert_dir + '/token.jwt'))
case('kafka-python-wrong-plain', 'refused', sasl_port, sasl_mechanism='PLAIN',
     sasl_plain_password='wrong', **sasl)
case('kafka-python-wrong-scram', 'refused', sasl_port, sasl_mechanism='SCRAM-SHA-512',
     sasl_plain_password='wrong', **sasl)
case('kafka-python-expired-token', 'refused', sasl_port, security_protocol='SASL_SSL',
     sasl_mechanism='OAUTHBEARER', sasl_oauth_token_provider=token_file(cert_dir + '/expired.jwt'))
case('kafka-python-untrusted', 'refused', ssl_port, security_protocol='SSL', ca='ca2.pem')
