// Writes golden __transaction_state records with Kafka's own transaction coordinator
// (kafka-transaction-coordinator: TransactionLog.keyToBytes / valueToBytes, the serializer its
// TransactionStateManager appends with), and Kafka's table of valid state transitions
// (TransactionState.VALID_PREVIOUS_STATES). tarn's src/txn is checked against them in
// src/txn/txn_records_test.cc; the formats are described in docs/transactions.md.
//
// Run: java -cp "$(scripts/kafka-ref libs)/*" tests/java/TransactionLogGolden.java <outdir>
// The committed files in tests/fixtures/transaction-log/ were made with
// <outdir> = tests/fixtures/transaction-log.
//
// Files: key.bin (the key of "my-txn"); <name>.value.bin for the values below (one partition
// each where the order of Kafka's HashSet would otherwise decide the bytes): value version 0
// with transaction.version 0 (prepare_commit, complete_commit: what tarn writes), version 1 with
// 1 and 2 (ongoing, complete_abort, empty, ongoing_tv2: what tarn reads); transitions.txt, one
// line "FROM TO true|false" per pair of state ids.
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.coordinator.transaction.TransactionLog;
import org.apache.kafka.coordinator.transaction.TransactionState;
import org.apache.kafka.coordinator.transaction.TxnTransitMetadata;
import org.apache.kafka.server.common.TransactionVersion;

public class TransactionLogGolden {
  static TxnTransitMetadata meta(TransactionState state, List<TopicPartition> partitions,
                                 TransactionVersion tv) {
    return new TxnTransitMetadata(42L, -1L, -1L, (short) 3, (short) 2, 60000, state,
        new HashSet<>(partitions), 100L, 200L, tv);
  }

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    Files.createDirectories(out);
    Files.write(out.resolve("key.bin"), TransactionLog.keyToBytes("my-txn"));
    List<TopicPartition> one = List.of(new TopicPartition("topic-a", 7));
    Files.write(out.resolve("ongoing.value.bin"),
        TransactionLog.valueToBytes(meta(TransactionState.ONGOING, one, TransactionVersion.TV_1),
            TransactionVersion.TV_1));
    Files.write(out.resolve("prepare_commit.value.bin"),
        TransactionLog.valueToBytes(
            meta(TransactionState.PREPARE_COMMIT, one, TransactionVersion.TV_0),
            TransactionVersion.TV_0));
    Files.write(out.resolve("complete_abort.value.bin"),
        TransactionLog.valueToBytes(
            meta(TransactionState.COMPLETE_ABORT, List.of(), TransactionVersion.TV_1),
            TransactionVersion.TV_1));
    Files.write(out.resolve("empty.value.bin"),
        TransactionLog.valueToBytes(meta(TransactionState.EMPTY, List.of(), TransactionVersion.TV_1),
            TransactionVersion.TV_1));
    Files.write(out.resolve("complete_commit.value.bin"),
        TransactionLog.valueToBytes(
            meta(TransactionState.COMPLETE_COMMIT, List.of(), TransactionVersion.TV_0),
            TransactionVersion.TV_0));
    // transaction.version 1 and 2 write value version 1 (flexible, tagged fields): tarn reads it.
    Files.write(out.resolve("ongoing_tv2.value.bin"),
        TransactionLog.valueToBytes(meta(TransactionState.ONGOING, one, TransactionVersion.TV_2),
            TransactionVersion.TV_2));
    StringBuilder t = new StringBuilder();
    for (TransactionState from : TransactionState.values()) {
      for (TransactionState to : TransactionState.values()) {
        t.append(from.id()).append(' ').append(to.id()).append(' ')
            .append(to.validPreviousStates().contains(from)).append('\n');
      }
    }
    Files.writeString(out.resolve("transitions.txt"), t.toString());
    System.out.println("wrote golden transaction log records to " + out);
  }
}
